#!/usr/bin/env python3
"""mcpstudio: turn the commands you already have into MCP tools.

One standard-library module that serves the Model Context Protocol over stdio
(or Streamable HTTP with --http). A command template becomes one tool whose
JSON schema comes from its fields; a config file adds tools, script folders,
Agent Skills and other MCP servers behind this one:

    python3 mcpstudio.py echo "{message}"
    python3 mcpstudio.py git log "[--oneline]" -n "{limit}" -- "{path # file to inspect}"
    python3 mcpstudio.py serve --config tools.json
    python3 mcpstudio.py --help

The shell is never involved: a template is parsed once into words, and every
call renders those words into an argv list that is executed directly.

The module reads top to bottom; each section uses only what stands above it:
Compatibility, Errors, Shared helpers, Schema validation, Naming, Template pieces,
The core promise (a field's value never runs as code), Templates, Frontmatter (of
SKILL.md), Processes, Logging, JSON-RPC session and the stdio transport, A command's
life, Sources (template tools, script folders, Agent Skills), Catalog, Tasks, Guard
rails (in front of every call), Tool search, the 2026-07-28 era, Configuration,
OAuth 2.1 for URL upstreams, Input on the way, Upstreams, Aggregator (other MCP
servers), Server (the MCP methods), Sign-in (people and their access tokens),
Streamable HTTP, Command line (options and the server they build), Tools for people
(inspect, call, install, import, config edits, zipapp), tui, and `main`.
"""


# --------------------------------------------------------------------------
# Compatibility: CPython 3.8 to 3.13. Everything version-specific lives here.
# --------------------------------------------------------------------------
# - `from __future__ import annotations` keeps `list[str]` hints legal on 3.8.
# - No `match`, `asyncio.TaskGroup`, `asyncio.timeout`, `asyncio.to_thread`,
#   `str.removeprefix`: they are newer than 3.8.
# - Child processes are driven through `loop.subprocess_exec` with our own
#   protocol: from 3.11 on `Process.wait()` also waits for the pipes to close,
#   which hangs when a grandchild inherited them; `process_exited` does not.

from __future__ import annotations

import asyncio
import atexit
import base64
import collections
import contextlib
import functools
import io
import json
import math
import operator
import os
import re
import select
import signal
import stat
import subprocess
import sys
import threading
import time
import types
import weakref

__version__ = "0.1.0"

__all__ = [
    "McpStudioError",
    "UsageError",
    "TemplateError",
    "McpError",
    "ToolError",
    "validate",
    "safe_name",
    "Field",
    "Template",
    "ProcessResult",
    "ProcessRunner",
    "CommandTool",
    "ToolSpec",
    "TemplateTools",
    "Catalog",
    "Server",
    "ScriptDirectory",
    "CommandTemplate",
    "ConfigError",
    "ConfigLoader",
    "Aggregator",
    "Upstream",
    "HttpServer",
    "Log",
    "RunSettings",
    "StdioFraming",
    "Session",
    "CallContext",
    "CommandResource",
    "UpstreamSpec",
    "RpcClient",
    "McpClient",
    "ListingCache",
    "ManagerTools",
    "StdioClient",
    "FrontmatterError",
    "parse_frontmatter",
    "SkillFolders",
    "main",
]

_POSIX = os.name == "posix"

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # the handshake era
LATEST_PROTOCOL_VERSION = PROTOCOL_VERSIONS[0]
MODERN_VERSIONS = ("2026-07-28",)  # per-request `_meta`, no handshake, `server/discover`
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"

DEFAULT_TIMEOUT = 60.0          # seconds a tool call may run
DEFAULT_MAX_OUTPUT = 1 << 20    # bytes kept of each of stdout and stderr
DEFAULT_MAX_TEXT = 20000        # characters of output in a result; more is kept whole and linked (docs/output.md)
ERROR_MAX_TEXT = 10000          # ... in an error result: Claude Code cuts those past about 11,000
DEFAULT_MAX_CONCURRENCY = 32    # commands running at once
DEFAULT_MAX_NAME_LENGTH = 48    # leaves room for a client prefix such as mcp__<server>__
OK_EXIT_META = "mcpstudio/okExitCodes"  # a tool's `_meta` key: exit codes that count as success
ON_STDERR_META = "mcpstudio/onStderr"    # a log line's `_meta` key: mcpstudio wrote it on its stderr too
KILL_GRACE = 2.0                # seconds between SIGTERM and SIGKILL
EOF_DRAIN = 2.0                 # seconds in-flight calls may finish after stdin closes
PIPE_LINGER = 0.1               # seconds to drain pipes after the command itself exited
PROGRESS_INTERVAL = 1.0         # seconds between progress notifications
FEED_INTERVAL = 0.25            # seconds between two notifications of a running command's output lines
FEED_LINES = 3                  # ... the latest lines each carries
FEED_LINE = 200                 # ... characters of each line
PROMPT_QUIET = 0.3              # seconds an interactive command's unfinished last line stays alone before it is a question
PROMPT_ROUNDS = 50              # ... questions answered before its stdin ends
PROMPT_BACKOFF = 2.0            # the longest wait between two looks at a quiet command that is not reading
PAGE_SIZE = 100                 # items per tools/list page
MAX_MESSAGE = 256 << 20         # bytes of one incoming message; a larger one is skipped
MAX_UNSENT = 8 << 20            # bytes of replies the client has not read yet; then reading pauses
DROPPABLE = ("notifications/message", "notifications/progress")  # dropped while MAX_UNSENT bytes wait
WATCHDOG_ENV = "MCPSTUDIO_WATCHDOG"  # marks every child, so the watchdog finds it (see watchdog_main)
HELP_TIMEOUT = 10.0             # seconds a script's --help (or --state) may take
RESCAN_INTERVAL = 2.0           # seconds between looks for added, changed or removed scripts

LOG_LEVELS = tuple("debug info notice warning error critical alert emergency".split())

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002      # handshake era; 2026-07-28 uses -32602
HEADER_MISMATCH = -32020         # 2026-07-28 over HTTP: a header disagrees with the body
UNSUPPORTED_VERSION = -32022     # 2026-07-28: `_meta` names a version this server does not serve
MISSING_CAPABILITY = -32021      # 2026-07-28: the request needs a client capability it did not declare
# -32000 to -32008: the aggregator's own codes for a routed request (-32002 stays the spec's "resource not found")
SERVER_NOT_FOUND = -32000
SERVER_START_FAILED = -32001
SERVER_NOT_RUNNING = -32003
SERVER_TIMEOUT = -32004
SERVER_ANSWER_TOO_LARGE = -32005
TOOL_DENIED = -32006             # the tool exists, but its server or namespace denies it
SERVER_SIGN_IN = -32007          # a URL server wants a sign-in that this process may not start (the message says how)
SERVER_ANSWER_LOST = -32008      # a URL server ended a request's event stream unanswered; it may still run


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

BAD_JSON = (ValueError, RecursionError)  # what json.loads raises: not JSON, or nested too deeply
ID_TYPES = (str, int)  # of a JSON-RPC id or a progress token (a bool is an int too: tell it apart where it matters)


class McpStudioError(Exception):
    """Base class of every error mcpstudio raises on purpose."""


class UsageError(McpStudioError):
    """A mistake on the command line: printed as `mcpstudio: error: ...`, exit 2."""


class HelpRequested(McpStudioError):
    """-h or --help among a subcommand's options: main prints that subcommand's help (args[0]), exit 0
    (the TUI's edits, which run the same commands, refuse it)."""


class TemplateError(McpStudioError):
    """A mistake in a command template, found when it is parsed (the author's mistake).

    `word` is the template word (0-based) and `template` the whole template,
    so the message can point at the place.
    """

    def __init__(self, message, word=None, template=None):
        self.word = word
        self.template = template
        if word is not None and template is not None:
            message = "%s (in word %d, %r)" % (message, word + 1, template[word])
        super().__init__(message)


class McpError(McpStudioError):
    """A JSON-RPC error to send back: only the server's dispatcher turns it into one."""

    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self):
        """The JSON-RPC `error` object: code, message and data when there is any."""
        error = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ToolError(McpStudioError):
    """A tool call that cannot go ahead (the caller's mistake, or a refusal): the server answers it as an `isError`
    result (tool_result), with `meta` as the result's `_meta` when given."""

    def __init__(self, message, meta=None):
        super().__init__(message)
        self.meta = meta


class ConfigError(McpStudioError):
    """A mistake in a config file; the message names the file and where in it."""


class FrontmatterError(McpStudioError):
    """YAML outside the subset a frontmatter may use; `line` counts from the file's first line."""

    def __init__(self, message, line=None):
        self.line = line
        super().__init__("line %d: %s" % (line, message) if line else message)


class UpstreamError(McpError):
    """A routed request that could not be carried out; a call the aggregator routes raises a ToolError for the
    codes of a server that cannot answer now (see Aggregator.call_tool)."""


class OAuthError(McpStudioError):
    """A sign-in that failed or may not start here; its message says what to do (without the control
    characters, such as terminal escapes, a server's text may carry)."""

    def __init__(self, message):
        super().__init__(re.sub(r"[\x00-\x1f\x7f-\x9f]", "", message))


class ChildRefused(McpStudioError):
    """mcpstudio in a child (`inspect`, `call`) refused its mode and said why on its stderr: exit with its code
    (`args[0]`, 2 for a bad template or option, as `serve` exits), adding nothing."""


class TokenError(McpStudioError):
    """An access token a signed-in `serve --http` refuses: why (the 401's error_description), never the token."""


class UnknownKey(TokenError):
    """A JWT whose `kid` the issuer's JWKS does not hold (yet: the issuer may have rotated its keys), or a token
    the identity provider could not be asked about now: not remembered, the next try may pass."""


class HttpError(McpStudioError):
    """A request the HTTP server refuses: the status to answer with, and the JSON-RPC error when there is one."""

    def __init__(self, status, message, code=None, request_id=None, headers=(), data=None):
        super().__init__(message)
        self.status, self.code, self.request_id, self.headers = status, code, request_id, list(headers)
        self.data = data


# --------------------------------------------------------------------------
# Shared helpers: hashes, private files, name patterns, loopback addresses, headers
# --------------------------------------------------------------------------
# Small helpers that sections far apart use (a short hash, a private JSON file, name
# globs, the loopback test, a header's value, the default config path): they stand
# here, above all of their users.

def _hash(text, digits=16):
    """The first `digits` hex digits of the SHA-256 of `text` (lone surrogates too, as JSON may carry them)."""
    import hashlib
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:digits]


def _match(name, patterns):
    import fnmatch
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def write_private_json(path, data):
    """Write `data` as JSON atomically through a new file of an unpredictable name, mode 0600 in a folder made
    0700 (on Windows the user's profile folder guards it); the temporary file never outlives a failure. Sign-ins,
    listing and discovery caches, and RunningStats are written so."""
    import secrets
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    if _POSIX:
        os.chmod(folder, 0o700)
    temporary = "%s.%s.tmp" % (path, secrets.token_hex(8))
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | (os.O_NOFOLLOW if _POSIX else 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(temporary, path)
    except BaseException:
        os.remove(temporary)
        raise


def read_private_json(path):
    """The JSON in a file write_private_json wrote (a symlink in its place is not followed); OSError, ValueError."""
    with os.fdopen(os.open(path, os.O_RDONLY | (os.O_NOFOLLOW if _POSIX else 0)), encoding="utf-8") as f:
        return json.load(f)


def _loopback(host):
    """True only for `localhost` and loopback addresses (127.0.0.0/8, ::1); never for names."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    import ipaddress
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _header_value(value):
    """Trim; decode the =?base64?...?= form 2026-07-28 clients use for non-ASCII values."""
    value = value.strip()
    if value.startswith("=?base64?") and value.endswith("?="):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return value
    return value


def default_config_path():
    """$XDG_CONFIG_HOME/mcpstudio/config.json, else ~/.config/mcpstudio/config.json."""
    return os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser(os.path.join("~", ".config")), "mcpstudio", "config.json")


# --------------------------------------------------------------------------
# Schema validation: the one JSON Schema checker (the subset tools use)
# --------------------------------------------------------------------------

NUMBER = (int, float)  # a JSON number's Python types (a bool is an int too: tell it apart where it matters)

_JSON_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": NUMBER,
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def _object(value):
    """`value` when it is a JSON object, else an empty one: what a reader of untrusted JSON walks on."""
    return value if isinstance(value, dict) else {}


def _type_name(value):
    """The JSON Schema type of `value` (a bool is a boolean, not an integer), else its Python type's name."""
    if isinstance(value, bool):
        return "boolean"
    return next((name for name, kinds in _JSON_TYPES.items() if isinstance(value, kinds)), type(value).__name__)


def object_schema(properties, required):
    """The JSON schema of an object with these properties and no others; `required` listed when not empty."""
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _is_type(value, name):
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _JSON_TYPES.get(name, ()))


def validate(value, schema, where=""):
    """Check `value` against `schema`; return a list of messages (empty when valid).

    Supports type (or a list of types), enum, const, properties, required,
    additionalProperties, items, minItems/maxItems, minLength/maxLength,
    pattern, minimum/maximum and exclusive bounds. Each message names the
    place (`where`, e.g. "`limit`" or "`paths[2]`") and the rule broken.
    """
    errors = []
    label = where or "the value"
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_is_type(value, n) for n in names):
            errors.append("%s must be %s, not %s" % (label, " or ".join(names), _type_name(value)))
            return errors
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s must be one of %s" % (label, ", ".join(json.dumps(v) for v in schema["enum"])))
    if "const" in schema and value != schema["const"]:
        errors.append("%s must be %s" % (label, json.dumps(schema["const"])))
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append("%s must not be empty" % label if schema["minLength"] == 1 else
                          "%s must be at least %d characters long" % (label, schema["minLength"]))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append("%s must be at most %d character%s long" % (
                label, schema["maxLength"], "" if schema["maxLength"] == 1 else "s"))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append("%s must match the pattern %s" % (label, schema["pattern"]))
    elif isinstance(value, NUMBER) and not isinstance(value, bool):
        for key, broken, words in (("minimum", operator.lt, "at least"), ("maximum", operator.gt, "at most"),
                                   ("exclusiveMinimum", operator.le, "more than"),
                                   ("exclusiveMaximum", operator.ge, "less than")):
            if key in schema and broken(value, schema[key]):
                errors.append("%s must be %s %s" % (label, words, schema[key]))
    elif isinstance(value, (list, tuple)):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append("%s must have at least %d item%s" % (
                label, schema["minItems"], "" if schema["minItems"] == 1 else "s"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append("%s must have at most %d item%s" % (
                label, schema["maxItems"], "" if schema["maxItems"] == 1 else "s"))
        items = schema.get("items")
        if isinstance(items, dict):
            base = where or "item"
            for i, item in enumerate(value):
                errors.extend(validate(item, items, "%s[%d]" % (base, i)))
    elif isinstance(value, dict):
        properties = schema.get("properties", {})
        prefix = where + "." if where else ""
        for name in schema.get("required", ()):
            if name not in value:
                errors.append("`%s%s` is required" % (prefix, name))
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            place = "`%s%s`" % (prefix, name)
            if name in properties:
                errors.extend(validate(item, properties[name], place))
            elif extra is False:
                errors.append("%s is not a known argument" % place)
            elif isinstance(extra, dict):
                errors.extend(validate(item, extra, place))
    return errors


# --------------------------------------------------------------------------
# Naming: one function makes every public name safe for strict clients
# --------------------------------------------------------------------------

_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def safe_name(name, max_length=DEFAULT_MAX_NAME_LENGTH, taken=()):
    """Return `name` as a tool name strict clients accept: `^[A-Za-z0-9_-]{1,max_length}$`.

    Other characters become `_`. A name that is too long, or already in
    `taken`, is cut and given `_` plus six hex digits of a hash of the
    original, so the result is deterministic and distinct.
    """
    clean = _UNSAFE_NAME_CHARS.sub("_", name) or "tool"
    if len(clean) <= max_length and clean not in taken:
        return clean
    salt = 0
    while True:
        seed = name if salt == 0 else "%s#%d" % (name, salt)
        suffix = "_" + _hash(seed, 6)
        candidate = clean[: max(1, max_length - len(suffix))] + suffix
        if candidate not in taken:
            return candidate
        salt += 1


def match_spellings(arguments, keys):
    """Rename arguments to the known key they spell with `-` and `_` swapped.

    `my-var` reaches a `my_var` property and `max_count` a `max-count` option;
    names that match a key exactly, or none, are left as they are.
    """
    if all(name in keys for name in arguments):
        return arguments
    loose = {key.replace("-", "_"): key for key in keys}
    out = {}
    for name, value in arguments.items():
        key = name if name in keys else loose.get(name.replace("-", "_"), name)
        out[key if key not in arguments or key == name else name] = value
    return out


def separator_problem(separator):
    """Why `separator` cannot join names (server or folder, then tool), or None: one rule for every mode."""
    if re.fullmatch(r"[A-Za-z0-9_-]{1,8}", separator):
        return None
    return "use 1 to 8 of the characters A-Z a-z 0-9 _ -, which every client accepts in tool names"


MANAGER_PREFIX = "mcpstudio"


# --------------------------------------------------------------------------
# Template pieces: fields, groups and the text between them
# --------------------------------------------------------------------------
# What a template word is made of (literal text, Field, Group) and the small readers
# of those pieces that the code checker and the Template below both use.

_FIELD_NAME = r"[A-Za-z_][A-Za-z0-9_-]*"
_FIELD = re.compile(
    r"\{\{(?P<n2>%(n)s)(?P<a2>\.\.\.|:file|:folder)?\s*(?:\#\s*(?P<d2>[^{}]*?))?\s*\}\}"
    r"|\{(?P<n1>%(n)s)(?P<a1>\.\.\.|:file|:folder)?\s*(?:\#\s*(?P<d1>[^{}]*?))?\s*\}"
    r"|\[(?P<flag>--?%(n)s)\s*(?:\#\s*(?P<df>[^\[\]]*?))?\s*\]"
    r"|\[(?P<n3>%(n)s)(?P<a3>\.\.\.|:file|:folder)?\s*(?:\#\s*(?P<d3>[^\[\]]*?))?\s*\]"
    % {"n": _FIELD_NAME}
)
_ESCAPABLE = "{}[]\\"
_KINDS = {"...": "array", ":file": "file", ":folder": "folder"}  # a folder: mcpstudio's, not the caller's
_SUFFIXES = {kind: suffix for suffix, kind in _KINDS.items()}
_FILE_VALUE = "%s: a file, as data:<type>;name=<file name>;base64,<data> or a resource URI"
_FIELD_START = re.compile(r"[{\[]\{?(%s)(?:\.\.\.|:file|:folder)?\s*#" % _FIELD_NAME)  # a field with a description begins
_NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
_OPEN_FIELD = re.compile(r"(?<!\\)\{\{?%s(?:\.\.\.|:file|:folder)?$" % _FIELD_NAME)  # `{a` just before a field: {a{b}}


_UNCLOSED_FIELD = re.compile(r"(?<!\\)\{\{?%s(?:\.\.\.|:file|:folder)?(?=[^}]*$)" % _FIELD_NAME)


def unclosed_fields(words):
    """The `{name` openings in `words` that no `}` after them closes: literal text, where a field was meant."""
    return [match.group() for word in words for match in _UNCLOSED_FIELD.finditer(word)]


def unclosed_warning(words):
    """The warning for unclosed_fields(words), or None."""
    found = unclosed_fields(words)
    return found and ("%s is not closed, so it is passed as that text, not a field: close it (`%s}`), or write "
                      "`\\{` for a literal brace" % (", ".join("`%s`" % text for text in found), found[0]))


def _refuse_nested(text, at, match, error):
    """`{a{b}}` is a field inside a field, which the syntax does not have: an error, not a field `b`."""
    outer = _OPEN_FIELD.search(text, 0, at) if match.group().startswith("{") else None
    if outer:
        whole = outer.group() + match.group() + ("}" if text.startswith("}", match.end()) else "")
        raise error("`%s` stands inside another field (`%s`): a field cannot hold a field; write them side by "
                    "side, or escape the outer brace (`\\%s`)" % (match.group(), whole, outer.group()))


class Field:
    """One named placeholder of a template.

    `kind` is "string", "array", "boolean" or "file" (`{name:file}`: a data: URI in, a path to the command); `key` is the schema property
    (dashes become underscores); `flag` is the text a boolean emits.
    """

    __slots__ = ("name", "key", "kind", "required", "description", "flag", "in_group")

    def __init__(self, name, kind, required, description=None, flag=None, in_group=False):
        self.name = name
        self.key = name.replace("-", "_")
        self.kind = kind
        self.required = required
        self.description = description or None
        self.flag = flag
        self.in_group = in_group

    def __repr__(self):
        return "Field(%r, %r, required=%r)" % (self.name, self.kind, self.required)

    def schema(self):
        """This field's JSON schema property (type, description, items for arrays)."""
        if self.kind == "array":
            prop = {"type": "array", "items": {"type": "string"}}
            if self.required:
                prop["minItems"] = 1
        elif self.kind == "boolean":
            prop = {"type": "boolean", "default": False}
        else:
            prop = {"type": "string"}
        if self.description or self.kind == "file":
            prop["description"] = _FILE_VALUE % (self.description or self.name) if self.kind == "file" else self.description
        return prop


def _lead_text(word):
    """The literal text a word starts with, up to its first field."""
    text = []
    for piece in word:
        if not isinstance(piece, str):
            break
        text.append(piece)
    return "".join(text)


def _has_field(word):
    return any(not isinstance(p, str) for p in word)


def _first_field(word):
    piece = next(p for p in word if not isinstance(p, str))
    return piece.name if isinstance(piece, Field) else piece.fields[0].name


def _text(value):
    """A value as command-line text: JSON spelling for booleans and null."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return str(value)


class Group:
    """An optional piece of a word, such as `[--voice={voice}]`."""

    __slots__ = ("pieces", "fields")

    def __init__(self, pieces):
        self.pieces = pieces
        self.fields = [p for p in pieces if isinstance(p, Field)] + [
            f for p in pieces if isinstance(p, Group) for f in p.fields]

    def given(self, arguments):
        for field in self.fields:
            value = arguments.get(field.key)
            if value is None or value is False or (field.kind == "array" and not value):
                return False
        return True


def _render_pieces(pieces, arguments, parts):
    """Append the rendering of `pieces` to `parts`.

    Returns (lead, present): `lead` is what begins the text ("text", a flag or
    array marker, or the string Field that comes first, given or not; None if
    nothing), `present` whether any literal text or given value was there
    (False also when a `{field}` written with braces was not given: its
    whole word goes, rather than leaving half an argument).
    """
    lead, present = None, False
    for piece in pieces:
        if isinstance(piece, str):
            parts.append(piece)  # an empty quote ("") is present but leads nothing: `""{f}` is `{f}`
            lead, present = lead or ("text" if piece else None), True
        elif isinstance(piece, Group):
            if piece.given(arguments):
                inner, _ = _render_pieces(piece.pieces, arguments, parts)
                lead, present = lead or inner, True
        else:
            value = arguments.get(piece.key)
            if piece.kind == "boolean":
                if value:
                    parts.append(piece.flag)
                    lead, present = lead or "flag", True
            elif piece.required and (value is None or (piece.kind == "array" and not value)):
                return None, False
            elif piece.kind == "array":
                if value:
                    parts.append(",".join(_text(v) for v in value))
                    lead, present = lead or "array", True
            else:
                lead = lead or piece  # a field leads even when empty or left out: `{a}-{b}` is led by `a`
                if value is not None:
                    parts.append(_text(value))
                    present = True
    return lead, present


def _closing_bracket(word, start):
    """Index of the `]` that closes the `[` at `start` (0 if none)."""
    depth = 0
    for match in re.finditer(r"\\.|\[|\]", word[start:], re.S):
        depth += {"[": 1, "]": -1}.get(match.group(), 0)
        if depth == 0 and match.group() == "]":
            return start + match.start()
    return 0


def _piece_text(piece, in_group=False):
    if isinstance(piece, str):  # re-escape literal text that would read as a field
        if piece.endswith("\\"):
            piece += "\\"  # a field follows: keep the backslash from escaping it
        return _FIELD.sub(lambda m: "\\" + m.group(), piece) if "{" in piece or "[" in piece else piece
    if isinstance(piece, Group):
        return "[%s]" % "".join(_piece_text(p, True) for p in piece.pieces)
    if piece.kind == "boolean":
        return "[%s]" % piece.flag
    return ("{%s%s}" if piece.required or in_group else "[%s%s]") % (piece.name, _SUFFIXES.get(piece.kind, ""))


def _article(kind):
    return "an" if kind[0] in "aeiou" else "a"


def _decoded(data):
    """UTF-8 bytes as text; what is not valid UTF-8 becomes U+FFFD."""
    return data.decode("utf-8", "replace")


def _clip(text, limit):
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------
# The core promise: a field's value never runs as code
# --------------------------------------------------------------------------
# `check_code_fields`, the one check every command template passes before it is
# served: a field whose value would be code (a shell's or an interpreter's program, an
# evaluating builtin, an option that runs a command or writes a file) or would choose
# the program is refused. Its tables name the programs that run their arguments.

# Where a value would be code. A command is walked the way the program that
# runs reads it: through wrappers (`env X=1`, `timeout 5`, `nice -n 5`,
# `sudo -u u`, `xargs`, `busybox` ...) to the program, then through that
# program's options to the words it runs as code (`sh -ec CODE`, `python3 -Ic
# CODE`, `awk PROGRAM`, `jq FILTER`). A field there, or standing for the
# program or script itself, is refused when the template loads. A program not
# known here is a plain command whose arguments are data, but a shell or an
# interpreter named later on its line (`docker exec c sh -c CODE`) is checked.

# Wrappers: name -> (short options that take a word, long options that take a
# word, its other long options, operands before the command (options may
# follow them too), option letters after which the rest of the line is one
# shell command). A long option not listed stops the walk: a field after it is
# refused, since the option might take the next word and the command move.
_PRLIMIT_RESOURCES = ("--as --core --cpu --data --fsize --locks --memlock --msgqueue --nice --nofile --nproc --rss "
                      "--rtprio --rttime --sigpending --stack")
_SETARCH_FLAGS = ("--verbose --addr-no-randomize --fdpic-funcptrs --mmap-page-zero --addr-compat-layout "
                  "--read-implies-exec --32bit --short-inode --whole-seconds --sticky-timeouts --3gb --4gb "
                  "--uname-2.6 --list")
_WRAPPERS = {name: (takes, tuple(long_takes.split()), tuple(long_flags.split()), operands, letters)
             for name, (takes, long_takes, long_flags, operands, letters) in {
    "env": ("uCSa", "--unset --chdir --split-string --argv0",
                    "--ignore-environment --null --debug --block-signal --default-signal --ignore-signal "
                    "--list-signal-handling", 0, "S"),
    "timeout": ("sk", "--signal --kill-after", "--preserve-status --foreground --verbose", 1, ""),
    "nice": ("n", "--adjustment", "", 0, ""),
    "exec": ("a", "", "", 0, ""),
    "time": ("fo", "--format --output", "", 0, ""),
    "stdbuf": ("ioe", "--input --output --error", "", 0, ""),
    "sudo": ("ugChDprtTU", "--user --group --close-from --host --chdir --prompt --role --type --command-timeout "
                           "--other-user --chroot",
                           "--shell --login --set-home --non-interactive --preserve-env --stdin", 0, "si"),
    "doas": ("uC", "", "", 0, "s"),
    "xargs": ("adEILnPs", "--arg-file --delimiter --max-args --max-procs --max-chars --process-slot-var",
                          "--null --verbose --exit --no-run-if-empty --interactive --open-tty --show-limits --eof "
                          "--replace --max-lines", 0, ""),
    "chroot": ("", "--userspec --groups", "--skip-chdir", 1, ""),
    "ionice": ("cnpPu", "--class --classdata --pid --pgid --uid", "--ignore", 0, ""),
    "flock": ("cwE", "--command --timeout --wait --conflict-exit-code",
                     "--shared --exclusive --unlock --nonblocking --nb --close --no-fork --verbose", 1, "c"),
    "npx": ("pc", "--package --call", "--yes --no", 0, "c"),
    # util-linux's, coreutils' and sysvinit-utils' other commands that run a command (their manuals, and for
    # util-linux the getopt strings of its 2.38.1 sources, read for issue 41; docs/security.md lists them)
    "taskset": ("", "", "--all-tasks --cpu-list --pid", 1, ""),
    "chrt": ("TPD", "--sched-runtime --sched-period --sched-deadline",
                    "--all-tasks --batch --deadline --fifo --idle --other --rr --reset-on-fork --verbose --pid --max", 1, ""),
    "setarch": ("", "", _SETARCH_FLAGS, 0, ""),  # after its ARCH, when the first word does not start with -
    "unshare": ("RwSG", "--root --wd --setuid --setgid --propagation --setgroups --map-user --map-group --map-users "
                        "--map-groups --monotonic --boottime",
                        "--fork --pid --mount --user --map-root-user --map-current-user --map-auto --net --ipc --uts "
                        "--cgroup --time --mount-proc --kill-child --keep-caps", 0, ""),
    "nsenter": ("tSGW", "--target --setuid --setgid --wdns",
                        "--all --mount --uts --ipc --net --pid --cgroup --user --time --root --wd "
                        "--preserve-credentials --no-fork --follow-context", 0, ""),
    "setpriv": ("", "--reuid --regid --ruid --rgid --euid --egid --groups --inh-caps --ambient-caps --bounding-set "
                    "--securebits --selinux-label --apparmor-profile --pdeathsig",
                    "--clear-groups --keep-groups --init-groups --nnp --no-new-privs --reset-env --dump --list-caps", 0, ""),
    "runcon": ("turl", "--user --role --type --range", "--compute", 0, ""),  # or CONTEXT first
    "prlimit": ("po", "--pid --output", "--noheadings --raw --verbose " + _PRLIMIT_RESOURCES, 0, ""),
    "choom": ("np", "--adjust --pid", "", 0, ""),
    "uclampset": ("pmM", "--pid", "--all-tasks --system --reset-on-fork --verbose", 0, ""),
    "switch_root": ("", "", "", 1, ""),  # NEWROOT INIT
    "setsid": ("", "", "--ctty --fork --wait", 0, ""),
}.items()}
_WRAPPERS.update(dict.fromkeys(("nohup", "builtin", "command", "busybox", "fstab-decode"), ("", (), (), 0, "")))
_SETARCH_NAMES = ("linux32", "linux64", "uname26", "i386", "x86_64", "s390", "s390x", "ppc", "ppc32", "ppc64", "sparc",
                  "sparc32", "sparc64", "sparc32bash", "mips", "mips32", "mips64", "ia64", "parisc", "parisc32",
                  "parisc64")  # the links to setarch util-linux installs, each one's ARCH
_WRAPPERS.update(dict.fromkeys(_SETARCH_NAMES, _WRAPPERS["setarch"]))
# Options after which a wrapper acts on processes that exist (taskset -p MASK PID) and runs no command: the
# words after them are data.
_PID_MODE = {"taskset": ("p", "--pid"), "chrt": ("p", "--pid", "m", "--max"), "uclampset": ("p", "--pid"),
             "ionice": ("p", "P", "u", "--pid", "--pgid", "--uid"), "choom": ("p", "--pid"), "prlimit": ("p", "--pid")}
# Letters whose word is optional and so only attached (`nsenter -m/proc/1/ns/mnt`, `xargs -eEOF`, `prlimit -n1024`):
# the rest of the word is theirs, never the next word.
_OPTIONAL_LETTERS = {"nsenter": "muinpCUTrw", "prlimit": "cdefilmnqrstuvxy", "xargs": "eil"}
# Wrappers that start a shell when no command follows; that shell reads its commands from stdin.
_SHELL_WITHOUT_COMMAND = ("chroot", "unshare", "nsenter", "setarch") + _SETARCH_NAMES
# Programs that join all their arguments into one shell command (ssh: after the
# host), and shell builtins that evaluate names and arithmetic (a[$(cmd)] runs cmd).
# bash's trap, alias, bind -x, complete -C, fc and enable -f run their words too; bash (the
# `sh` of macOS) evaluates a[$(cmd)] wherever it takes a variable name (read, printf -v).
_JOINERS = tuple("watch parallel su runuser cmd powershell ssh".split())
_BUILTINS = tuple("eval trap alias bind complete compgen fc enable hash".split())
_EVALUATORS = tuple("let declare typeset local export readonly read mapfile readarray getopts unset".split())
_SSH_TAKES = "BbcDEeFIiJLlmOopQRSWw"
_SHELLS = tuple("sh bash dash zsh ksh ash mksh yash posh fish rbash tcsh csh nu xonsh elvish".split())
# Interpreters: name -> (letters whose word is code, letters whose word is the
# program (no script operand follows), letters whose word is a module it
# loads, other letters that take a word, then the same for long options (words
# of a string, split below), and whether the first operand is program text
# rather than a script file, or None when operands are data but for
# NAME=value definitions, as in make).
_INTERPRETERS = {name: entry[:4] + tuple(tuple(words.split()) for words in entry[4:8]) + entry[8:]
                 for name, entry in {
    "python": ("c", "m", "", "WX", "", "", "", "--check-hash-based-pycs", False),
    "node": ("ep", "", "r", "C", "--eval --print", "", "--require --import --loader --experimental-loader --env-file",
             "--conditions --title --input-type", False),
    "ruby": ("e", "", "rI", "CE", "", "", "", "--encoding", False),
    "perl": ("eE", "", "MmI", "", "", "", "", "", False),
    "php": ("rBREd", "fF", "cz", "tS", "", "", "", "", False),
    "r": ("e", "f", "", "", "", "--file", "", "", False),
    "julia": ("eE", "", "L", "", "--eval --print", "", "--load", "", False),
    "expect": ("c", "f", "", "", "", "", "", "", False),
    "lua": ("e", "", "l", "", "", "", "", "", False),
    "osascript": ("e", "", "", "", "", "", "", "", False),
    "awk": ("e", "fE", "il", "vFW", "--source", "--file --exec", "--include --load", "--assign --field-separator", True),
    "sed": ("e", "f", "", "l", "--expression", "--file", "", "--line-length", True),
    "jq": ("", "f", "L", "", "", "--from-file", "", "--indent", True),
    "make": ("E", "fC", "", "IoW", "--eval", "--file --makefile --directory", "",
             "--include-dir --old-file --assume-old --what-if --new-file --assume-new", None),
}.items()}
# Other programs: options whose word is a command or code they run, or a file
# they run, read options from or write (`+` is the vi family's +COMMAND).
_RUNS = {name: tuple(options.split()) for name, options in {
    "git": "--config-env --exec-path --upload-pack --receive-pack --exec --extcmd --config --template --output "
           "--open-files-in-pager",
    "find": "-fprint -fprint0 -fprintf -fls",
    "tar": "--to-command --use-compress-program -I --checkpoint-action --info-script --new-volume-script -F "
           "--rsh-command --rmt-command",
    "zip": "-TT --unzip-command",
    "curl": "-K --config -o --output -T --upload-file",
    "wget": "-O --output-document -e --execute --config -o -a",
    "rsync": "-e --rsh --rsync-path",
    "scp": "-o -F -S", "sftp": "-o -F -S -b",
    "psql": "-c --command -f --file", "mysql": "-e --execute",  # \! runs a command
    "gdb": "-ex --eval-command -iex -x --command -ix",
    "vi": "+ -c --cmd -S -u -U -i -w -W",
    "sqlite": "-cmd -init",
    "emacs": "--eval -l --load --script",
    "printf": "-v", "test": "-v", "[": "-v",  # bash evaluates a[$(cmd)] in the name they take
    # coreutils, findutils and util-linux, their manuals read for issue 41: options that run a program (sort's
    # compressor, split's filter through $SHELL, install's strip program, the helper mkfs, fsck and mount run by
    # type) or write a file (sort -o, shuf -o, dd of=); less runs +COMMANDs (`!` runs a shell) and reads keys
    "sort": "--compress-program -o --output", "split": "--filter", "install": "--strip-program",
    "shuf": "-o --output", "dd": "of",
    "mkfs": "-t --type", "fsck": "-t", "mount": "-t --types -T --fstab",
    # script -c (its options come in any order, also after its file); the program agetty (getty) runs for a
    # login and the options it gives it; readprofile runs `zcat MAPFILE` through the shell for a map file
    # ending in .gz; scriptlive types its typescript's input into a shell (and see _scriptlive)
    "script": "-c --command", "agetty": "-l --login-program -o --login-options",
    "readprofile": "-m --mapfile",
    "scriptlive": "-c --command -I --log-in -B --log-io -t --timing -T --log-timing",
    "less": "+ -k --lesskey-file --lesskey-src -o -O --log-file --LOG-FILE",
}.items()}
_PROGRAM_NAMES = {"python3": "python", "pypy": "python", "pypy3": "python", "nodejs": "node", "bun": "node",
                  "gawk": "awk", "mawk": "awk", "nawk": "awk", "luajit": "lua", "gsed": "sed", "pwsh": "powershell",
                  "ipython": "python", "gmake": "make", "rscript": "r", "getty": "agetty",
                  "source": "source", ".": "source"}
_JQ_PAIRS = ("--arg", "--argjson", "--slurpfile", "--rawfile")  # jq options that take two words
# sysctl settings whose value names a program the kernel runs (as root)
_KERNEL_RUNS = tuple("kernel.core_pattern kernel.modprobe kernel.poweroff_cmd kernel.hotplug fs.binfmt_misc.register".split())
_SHELL_RESERVED = tuple("! { } if then else elif fi do done while until time".split())
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _program(text):
    """`/usr/bin/python3.11` -> python; `gawk` -> awk; `C:\\bin\\node.exe` -> node."""
    name = re.sub(r"\.exe$", "", re.split(r"[\\/]", text)[-1].lower())
    if name in _PROGRAM_NAMES:
        return _PROGRAM_NAMES[name]
    if name in _WRAPPERS or name in _INTERPRETERS or name in _SHELLS:
        return name
    if re.fullmatch(r"[nrge]?(vim?|view)|vimdiff|ex|ed", name):
        return "vi"
    name = re.sub(r"[0-9.]+$", "", name)
    return _PROGRAM_NAMES.get(name, name)


def _is_word(word, text):
    """Whether `word` is exactly the literal `text`."""
    return not _has_field(word) and _lead_text(word) == text


def _su_runs_a_command(words, runuser):
    """Whether su's or runuser's words give it a command (-c, --command, --session-command; runuser -u), so
    that the shell it starts does not read its commands from stdin."""
    for word in words:
        text = _lead_text(word).split("=", 1)[0]
        if text.startswith("--"):
            if len(text) > 2 and ("--command".startswith(text) or "--session-command".startswith(text) and
                                  len(text) > 3 or runuser and "--user".startswith(text)):
                return True
            continue
        for letter in text[1:] if text.startswith("-") else "":
            if letter == "c" or runuser and letter == "u":
                return True
            if letter in "gGsuw":  # the rest of the word is this option's value
                break
    return False


_STDIN_NAME = re.compile(r"-|/dev/stdin|/dev/fd/0|/proc/[^/]+/fd/0")  # a program file that is really stdin


def _long_option(name, known):
    """`name` as getopt_long reads it: the known option it spells out or is the only one to begin, else itself."""
    matches = [option for option in known if option.startswith(name)]
    return name if name in known or len(matches) != 1 else matches[0]


# A value goes into an environment variable under its own name only where
# no program acts on that name. Programs read upper-case variables (PATH,
# LD_PRELOAD, TAR_OPTIONS, MAKEFLAGS, PROMPT_COMMAND ...); the few lower-case
# ones they read are below (proxies; npm_config_*; zsh ties path, fpath ... to
# PATH, FPATH). Windows ignores case, so there a script option is never set
# under its own name; it arrives as MCPD_OPT_<name> and in the stdin JSON.
_QUIET_VARIABLE = re.compile(r"[a-z_][a-z0-9_]*")
_STEERING_VARIABLE = re.compile(r"(cd|f|man|module_|mail)?path|\w*_proxy|npm_config_\w*|yarn_\w*|pnpm_\w*")


def _steers(name):
    """Whether a program or the shell acts on the environment variable `name` (see above)."""
    return not _QUIET_VARIABLE.fullmatch(name) or bool(_STEERING_VARIABLE.fullmatch(name))


class _CodeCheck:
    """Walks one command's words (lists of pieces). `problem` is the refusal or None;
    `stdin_code` says how a program uses stdin when it makes it code or arguments
    (`sh` and `python3 -` read their program there, `xargs` turns it into arguments), else ""."""

    def __init__(self, words, guessing=False):
        self.words, self.problem, self.stdin_code = words, None, ""
        self.guessing = guessing  # only code positions count (a guess may be wrong about the rest)
        self._walk(0)

    def _refuse(self, index, text):
        if not self.problem and index < len(self.words) and _has_field(self.words[index]):
            word = self.words[index]
            self.problem = text.replace("%(name)s", _first_field(word)).replace(
                "%(word)s", "".join(_piece_text(p) for p in word))  # not %: program names and options may hold one

    def _code(self, index, program, note=""):
        self._refuse(index, "`%(name)s` stands inside code that " + program + " runs" + note + " (the word "
                     "`%(word)s`), so a value would be code: it could run any command or read any secret. Pass "
                     "the value as its own argument "
                     "(sh -c 'echo \"$1\"' sh {%(name)s}; jq --arg v {%(name)s} '.[$v]') or through stdin")

    def _choice(self, index, what):
        if self.guessing:
            return
        self._refuse(index, "`%(name)s` stands for " + what + " (the word `%(word)s`), so "
                     "a value would choose what runs. Write it out in the template; pass values as "
                     "arguments or through stdin")

    def _options(self, index, takes, long_takes=(), on_letter=None, on_long=None, pairs=(),
                 program="", long_flags=None, optional=""):
        """Skip `program`'s options from `index` and return the index of the first operand.
        `on_letter(letter, index of its word)` and `on_long(name, index of its word)` see each one;
        a long option may be abbreviated (--sp is --split-string); a letter in `optional` takes the
        rest of its word, if any, and never the next word. A field that would supply option
        letters or an option's name (`-{x}`, `--{x}`) is refused, and so is any field after a long
        option not in `long_takes` or `long_flags` (when given) that may take the next word."""
        words = self.words
        while index < len(words) and not self.problem:
            text, field = _lead_text(words[index]), _has_field(words[index])
            if text == "--" and not field:
                return index + 1
            if not text.startswith("-") or (text == "-" and not field):
                return index
            if text.startswith("--") and field and "=" not in text:
                self._among_options(index, program)
                return len(words)
            if text.startswith("--"):
                name = _long_option(text.split("=", 1)[0], long_takes + pairs + (long_flags or ()))
                if long_flags is not None and "=" not in text and name not in long_takes + long_flags:
                    for i in range(index + 1, len(words)):
                        self._refuse(i, "`%(name)s` follows `" + name + "`, an option of `" + program + "` that "
                                     "mcpstudio does not know, so which word it takes, and which is the command, "
                                     "is unknown (the word `%(word)s`). Write it as " + name + "=VALUE, or leave it out")
                    return len(words)
                size = 1 if "=" in text else 3 if name in pairs else 2 if name in long_takes else 1
                if on_long:
                    on_long(name, index if size == 1 else index + size - 1)
                index += size
                continue
            following, consumed = index + 1, False
            for at, letter in enumerate(text[1:], 1):
                attached = at + 1 < len(text) or field
                if on_letter:
                    on_letter(letter, index if attached or letter in optional else index + 1)
                if letter in optional:
                    consumed = attached
                    break
                if letter in takes:
                    following, consumed = index + (1 if attached else 2), True
                    break
            if field and not consumed:
                self._among_options(index, program)
            index = following
        return index

    def _stdin_value(self, index, option):
        """Whether the value of `option` (in word `index`, attached or the whole word) names stdin."""
        if index >= len(self.words) or _has_field(self.words[index]):
            return False
        import posixpath
        text = _lead_text(self.words[index])
        if text.startswith("--") and "=" in text:
            text = text.split("=", 1)[1]
        elif option and text.startswith("-") and len(text) > 1 and option.lstrip("-") in text[1:]:
            text = text[1:].split(option.lstrip("-"), 1)[1] or text  # -f- ; a bare -f has its value next
        return bool(_STDIN_NAME.fullmatch(posixpath.normpath(re.sub("/+", "/", text))))  # /dev/./stdin, /dev/fd//0

    def _reads_stdin(self, program):
        self.stdin_code = self.stdin_code or "`%s` reads the program it runs from stdin" % program

    def _among_options(self, index, program):
        self._refuse(index, "`%(name)s` stands among the options of `" + program + "` (the "
                     "word `%(word)s`), so a value could add any option, such as one that runs code. Write "
                     "the options out; a value may follow an option that takes one (-n{n}, --name={v})")

    def _rest_is_code(self, index, program, note=""):
        for i in range(index, len(self.words)):
            self._code(i, program, note)

    def _option_words(self, index, spellings):
        """Each (option, index of its word) of an option in `spellings` from `index` on, anywhere on the line:
        attached, bundled (`curl -sSLo FILE`), abbreviated or with its word next."""
        for i in range(index, len(self.words)):
            text = _lead_text(self.words[i])
            name = text.split("=", 1)[0]
            for option in spellings:
                bundled = len(option) == 2 and name[:1] == "-" != name[1:2] and option[1] in name
                if name == option or bundled or name[:1] == option == "+" or (
                        option.startswith("--") and len(name) > 2 and option.startswith(name)):
                    tail = name[name.index(option[-1]) + 1:] if bundled else name[len(option):]
                    yield option, i if "=" in text or tail or _has_field(self.words[i]) else i + 1

    def _runs(self, index, program, spellings):
        """Refuse a field as the word of an option in `spellings` (`tar --to-command=CMD`, `wget -O FILE`),
        anywhere on the line: attached, bundled (`curl -sSLo FILE`), abbreviated or as the next word."""
        for option, at in self._option_words(index, spellings):
            self._refuse(at, "`%(name)s` is the word of `" + program + " " + option + "`, which names a "
                         "command or code it runs, or a file it runs, reads options from or writes (the "
                         "word `%(word)s`), so a value could run any command or overwrite any file. Write "
                         "it out in the template; pass values as arguments or through stdin")

    def _walk(self, index):
        words = self.words
        while index < len(words) and not self.problem:
            lead = _lead_text(words[index])
            assignment = _ASSIGNMENT.match(lead)
            if assignment:  # NAME=value before the command (env, sudo, a shell script)
                if _steers(assignment.group()[:-1]):
                    self._refuse(index, "`%(name)s` is the value of `" + assignment.group() + "` (the word "
                                 "`%(word)s`), a variable programs or the shell act on (PATH, PROMPT_COMMAND, "
                                 "LD_PRELOAD, TAR_OPTIONS), so a value could choose what runs. Use a lowercase "
                                 "name, or pass the value as an argument")
                index += 1
                continue
            if _has_field(words[index]) and not lead.startswith("-"):
                self._choice(index, "the command to run")
                return
            program = _program(lead)
            if program.endswith("sh") and program != "ssh" and any(
                    re.fullmatch(r"-[a-z]*c[a-z]*", _lead_text(w)) for w in words[index + 1:]):
                self._shell(program, index + 1)  # an unknown shell given -c, such as oksh
                return
            if program in _WRAPPERS:
                index = self._wrapper(program, index + 1)
                continue
            if program in _JOINERS + _BUILTINS + _EVALUATORS:
                start = index + 1
                if program == "ssh":
                    def ssh_letter(letter, i):
                        if letter in "oF":  # -o ProxyCommand=..., -F a config that holds one
                            self._code(i, "`ssh -%s`" % letter)
                    start = self._options(start, _SSH_TAKES, (), ssh_letter, program="ssh") + 1  # past the host
                    if start >= len(words):  # no remote command: the remote shell runs what stdin says
                        self._reads_stdin("ssh HOST")
                if program in ("su", "runuser") and not _su_runs_a_command(words[start:], program == "runuser"):
                    self._shell_reads_stdin(program, "-c")
                self._rest_is_code(start, "`%s`" % program, " (it evaluates names and arithmetic: a[$(cmd)] "
                                   "runs cmd)" if program in _EVALUATORS else " (it joins its arguments into "
                                   "one shell command)")
            elif program == "[[" and any(_lead_text(w) in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v")
                                          for w in words[index + 1:]):
                self._rest_is_code(index + 1, "`[[ ... -eq ... ]]`", " as arithmetic (a[$(cmd)] runs cmd)")
            elif program in _SHELLS + ("source",):
                self._shell(program, index + 1)
            elif program in _INTERPRETERS:
                self._interpreter(program, index + 1)
            elif program == "deno":
                self._deno(index + 1)
            elif program == "find":
                self._find(index + 1)
            elif program in ("sg", "newgrp"):
                self._sg(program, index + 1)
            elif program == "scriptlive":
                self._scriptlive(index + 1)
            elif program == "sysctl" and not self.guessing:  # not code as such: `grep -r sysctl {dir}` is data
                self._sysctl(index + 1)
            elif program == "login" and not self.guessing:  # `docker login -u {u} -p {p} {registry}`
                self._login(index + 1)
            elif program == "git":
                def git_letter(letter, i):
                    if letter == "c":
                        self._code(i, "`git -c` (a config value such as core.sshCommand)")
                sub = self._options(index + 1, "cC", ("--git-dir", "--work-tree", "--namespace", "--config-env"),
                                    git_letter, program="git",
                                    long_flags=("--exec-path", "--bare", "--no-pager", "--no-optional-locks"))
                name = " ".join(_lead_text(w) for w in words[sub:sub + 2])
                if name in ("submodule foreach", "bisect run"):
                    self._rest_is_code(sub + 2, "`git %s`" % name)
                name = name.split(" ")[0]
                extra = {"rebase": ("-x",), "difftool": ("-x",), "grep": ("-O",), "format-patch": ("-o",)}
                self._runs(index + 1, "git " + name, _RUNS["git"] + extra.get(name, ()))
            elif program == "sqlite":  # its operands after the database are SQL, where .shell runs a command
                while index + 1 < len(words) and _lead_text(words[index + 1]).startswith("-"):
                    index += 1
                self._runs(index, "sqlite3", _RUNS["sqlite"])
                if index + 2 >= len(words):
                    self._reads_stdin("sqlite3")
                self._rest_is_code(index + 2, "`sqlite3`", " as SQL and dot-commands (.shell runs a command)")
            elif program in _RUNS:
                ex_mode = program == "vi" and (lead.endswith(("ex", "ed")) or any(_lead_text(w)[:2] in ("-e", "-E")
                                                                                   for w in words))
                self._runs(index + 1, lead, _RUNS[program] + (("-s",) if program == "vi" and not ex_mode else ()))
                if ex_mode:
                    self._reads_stdin(lead)  # ex mode reads its commands from stdin
                if program == "script" and not self.guessing and not any(
                        True for _ in self._option_words(index + 1, _RUNS["script"])):  # `npm run script`
                    self._shell_reads_stdin(lead, "-c")
                if not self.guessing:
                    self._guess(index + 1)  # gdb --args CMD
            elif not self.guessing:
                self._guess(index + 1)
            return

    def _guess(self, index):
        """A program not known here may still run what it is given (`docker exec c sh -c CODE`,
        `kubectl exec p -- sed CODE`, `flock LOCK awk CODE`): each later word is walked as if a
        command began there, and a field in a code position after it is refused too."""
        for i in range(index, len(self.words)):
            if not _has_field(self.words[i]) and _program(_lead_text(self.words[i])) not in _BUILTINS + _EVALUATORS + (
                    "printf", "test", "["):  # bash's own words: `go test -v {pkg}` is no `test -v`
                inner = _CodeCheck(self.words[i:], guessing=True)
                self.problem = self.problem or inner.problem
                self.stdin_code = self.stdin_code or inner.stdin_code  # `docker exec -i c sh`

    def _wrapper(self, program, index):
        takes, long_takes, long_flags, operands, shell_letters = _WRAPPERS[program]
        optional = _OPTIONAL_LETTERS.get(program, "")
        joined, seen, words = [], [], self.words

        def letter(char, i):
            seen.append(char)
            if char in shell_letters:
                joined.append("-" + char)
                if char in takes:
                    self._code(i, "`%s -%s`" % (program, char))

        def long_option(name, i):
            seen.append(name)
            if name in ("--split-string", "--shell", "--login", "--command", "--call"):
                joined.append(name)
                self._code(i, "`%s %s`" % (program, name))
        if program == "setarch" and index < len(words) and not _lead_text(words[index]).startswith("-"):
            index += 1  # setarch [ARCH] [options] PROGRAM: an ARCH is a first word that does not start with -
        index = self._options(index, takes, long_takes, letter, long_option, program=program, long_flags=long_flags,
                              optional=optional)
        if program == "env" and index < len(words) and _lead_text(words[index]) == "-" and not _has_field(words[index]):
            index += 1  # env - NAME=VALUE COMMAND: a lone - is -i
        if program == "runcon" and not set(seen) & {"c", "t", "u", "r", "l", "--compute", "--type", "--user", "--role",
                                                     "--range"}:
            operands = 1  # runcon CONTEXT COMMAND: without -c, -t, -u, -r or -l the first word is the context
        if operands:  # flock LOCKFILE -c CMD: options after the operand too
            index = self._options(index + operands, takes, long_takes, letter, long_option, program=program,
                                  long_flags=long_flags, optional=optional)
        if program == "xargs" and not self.stdin_code:
            self.stdin_code = "`xargs` turns stdin into arguments (options, or code with -I)"
        if set(seen) & set(_PID_MODE.get(program, ())):
            return len(words)  # taskset -p MASK PID: no command
        if joined:
            self._rest_is_code(index, "`%s %s`" % (program, joined[0]), " as one shell command")
            return len(self.words)
        if program in _SHELL_WITHOUT_COMMAND and index >= len(words):
            self._shell_reads_stdin(program)
        return index

    def _shell_reads_stdin(self, program, without="a command"):
        self.stdin_code = self.stdin_code or ("`%s` without %s runs a shell, which reads its commands from stdin"
                                              % (program, without))

    def _shell(self, program, index):
        flags = []
        fish = program == "fish"

        def letter(char, i):
            flags.append(char)
            if fish and char in "cC":
                self._code(i, "`fish -%s`" % char)

        def long_option(name, i):  # --command, --init-command, --rcfile, --init-file; any other with a field
            flags.extend("c" if "command" in name else "")
            self._code(i, "`%s %s`" % (program, name))
        index = self._options(index, "cCdo" if fish else "oO", ("--rcfile", "--init-file", "--command",
                                                               "--init-command"), letter, long_option,
                              program=program)
        if fish and ("c" in flags or "C" in flags):
            return  # the code was the option's own word, checked above
        if "c" in flags:
            self._code(index, "`%s -c`" % program)
        elif "s" in flags or index >= len(self.words) or self._stdin_value(index, ""):
            self._reads_stdin(program)  # `sh`, `sh -s`, `sh -`, `sh /dev/stdin`
        else:
            self._choice(index, "the script `%s` runs" % program)

    def _interpreter(self, program, index):
        (code, programs, modules, takes, long_code, long_programs, long_modules, long_takes,
         text_operand) = _INTERPRETERS[program]
        given = []

        def option(name, i, spelled, code, programs, modules):
            """One option of `program`: code in it, a program file it runs, a module it loads."""
            words = "%s %s" % (program, spelled)
            if name in code:
                self._code(i, "`%s`" % words)
                given.append(name)
            elif name in programs:
                self._choice(i, "the program `%s` runs" % words)
                given.append(name)
                if self._stdin_value(i, name):  # awk -f -, sed -f /dev/stdin
                    self._reads_stdin(words)
            elif name in modules:
                self._choice(i, "the module `%s` loads" % words)

        def letter(char, i):
            option(char, i, "-" + char, code, programs, modules)

        def long_option(name, i):
            option(name, i, name, long_code, long_programs, long_modules)
        index = self._options(index, code + programs + modules + takes,
                              long_code + long_programs + long_modules + long_takes, letter, long_option,
                              _JQ_PAIRS if program == "jq" else (), program)
        if text_operand is None:  # make NAME=value: make expands it ($(shell cmd) runs cmd)
            for i in range(index, len(self.words)):
                if "=" in _lead_text(self.words[i]):
                    self._code(i, "`%s NAME=VALUE`" % program)
            return
        if given:
            return  # the code came with an option: the operands are data
        if index >= len(self.words) or self._stdin_value(index, ""):
            if not text_operand:
                self._reads_stdin(program)  # python3, python3 -, python3 /dev/stdin
        elif text_operand:
            self._code(index, "`%s`" % program, " as its program")
        else:
            self._choice(index, "the script `%s` runs" % program)

    def _deno(self, index):
        if index < len(self.words) and _lead_text(self.words[index]) in ("eval", "run", "x"):
            sub = _lead_text(self.words[index])
            index = self._options(index + 1, "", program="deno")
            if sub == "eval":
                self._code(index, "`deno eval`")
            else:
                self._choice(index, "the program `deno %s` runs" % sub)

    def _find(self, index):
        """find's -exec, -execdir, -ok and -okdir run the words up to a lone `;`, or for -exec and -execdir up
        to a lone `+` right after a word holding `{}` (a `+` anywhere else is the command's argument)."""
        words = self.words
        self._runs(index, "find", _RUNS["find"])
        for i in range(index, len(words)):
            action = _lead_text(words[i])
            if action in ("-exec", "-execdir", "-ok", "-okdir") and not _has_field(words[i]):
                end, ends = i + 1, []
                while end < len(words) and not _is_word(words[end], ";"):
                    if action.startswith("-exec") and _is_word(words[end], "+") and end > i + 1:
                        before = words[end - 1]
                        if any(isinstance(p, str) and "{}" in p for p in before):
                            break
                        if _has_field(before):
                            ends.append(end)  # the value might hold {} and end the command here
                    end += 1
                for stop in ends + [end]:
                    self.problem = self.problem or _CodeCheck(words[i + 1:stop]).problem

    def _sg(self, program, index):
        """`sg [-] [GROUP [-c] COMMAND]` runs COMMAND with /bin/sh -c; `newgrp [-] [GROUP]`, and sg without a
        command, start a shell, which reads its commands from stdin."""
        words = self.words
        if index < len(words) and _is_word(words[index], "-"):
            index += 1
        index += 1  # the group
        if program == "sg" and index < len(words) and _is_word(words[index], "-c"):
            index += 1
        if program == "sg" and index < len(words):
            self._rest_is_code(index, "`sg GROUP`", " with /bin/sh -c")
        else:
            self._shell_reads_stdin(program)

    def _scriptlive(self, index):
        """`scriptlive [options] TIMING TYPESCRIPT` types the input a typescript holds into a shell: -c and
        each file it reads (-I, -B, -t, -T and the two operands) are code."""
        words = self.words
        self._runs(index, "scriptlive", _RUNS["scriptlive"])
        operands = 0
        while index < len(words) and operands < 2 and not self.problem:  # its options come in any order
            index = self._options(index, "cBITtdm", ("--command", "--log-in", "--log-io", "--timing",
                                                     "--log-timing", "--divisor", "--maxdelay"), program="scriptlive")
            if index < len(words):
                self._choice(index, "a file whose input `scriptlive` types into a shell")
                index, operands = index + 1, operands + 1

    def _login(self, index):
        """`login [-p] [-h HOST] [USER] [NAME=VALUE...]` puts each NAME=VALUE into the login shell's
        environment, refusing only a few names (LD_*, IFS, BASH_ENV, PATH, SHELL ...): a field in a
        NAME, or in the VALUE of a name programs or the shell act on, is refused as for `env`."""
        words = self.words
        index = self._options(index, "hr", program="login") + 1  # past the user
        for i in range(index, len(words)):
            text = _lead_text(words[i])
            if "=" not in text:
                self._refuse(i, "`%(name)s` is in the word `%(word)s` after `login USER`, which login puts into "
                             "the shell's environment when it holds NAME=, so a value could set any variable "
                             "(BASH_FUNC_ls%%=() { cmd; } runs cmd). Write the NAME= out in the template")
            elif _steers(text.split("=", 1)[0]):
                self._refuse(i, "`%(name)s` is the value of `" + text.split("=", 1)[0] + "=` after `login USER` "
                             "(the word `%(word)s`), a variable programs or the shell act on, so a value could "
                             "choose what runs. Use a lowercase name")

    def _sysctl(self, index):
        """`sysctl NAME=VALUE` sets a kernel setting (any operand holding `=` does), and some name a program
        the kernel runs (kernel.core_pattern=|PROG on a crash, kernel.modprobe ...): a field in such a
        VALUE, before the `=` (it could name any setting), or in a file `-p`/`-f`/`--load` reads is refused."""
        words = self.words
        loads = any(re.fullmatch(r"-\w*[pf].*", _lead_text(w)) or
                    _long_option(_lead_text(w).split("=", 1)[0], ("--load", "--pattern")) == "--load"
                    for w in words[index:])
        i = index
        while i < len(words):
            word, text = words[i], _lead_text(words[i])
            if not _has_field(word) and (text == "-r" or len(text) > 3 and "--pattern".startswith(text)):
                i += 2  # -r PATTERN: which settings -p applies
                continue
            if _has_field(word) and (text.startswith("-") or loads):
                self._refuse(i, "`%(name)s` is in the word `%(word)s` of `sysctl`, which " + (
                    "loads settings from the files it names" if loads else "takes it as an option") +
                             ", so a value could set kernel.core_pattern=|PROG, a program the kernel runs as root. "
                             "Write it out in the template")
            elif _has_field(word) and ("=" not in text or text.split("=", 1)[0].replace("/", ".") in _KERNEL_RUNS):
                self._refuse(i, "`%(name)s` stands in the setting `%(word)s` of `sysctl`, " + (
                    "where a value could name any setting and its value (kernel.core_pattern=|PROG: a program "
                    "the kernel runs as root)" if "=" not in text else "whose value names a program the kernel "
                    "runs as root") + ". Write it out in the template")
            i += 1


def _shell_commands(tokens):
    """The simple commands of a `"shell": true` script, each (words, fed, piped, writes): tokens split
    into words at unquoted blanks and into commands at | & ; ( ) and newlines, without
    redirections and reserved words; `fed` when a pipe or a `<` redirection gives its stdin, `piped`
    when a pipe does; `writes` the targets (words) of its `>` and `>>` redirections."""
    commands, words, word, writes = [], [], [], []
    skip = ops = fed = piped = False  # the word is a redirection; it holds only its operator so far
    last = ""

    def end_command(words, fed, piped, writes):
        while words and _lead_text(words[0]) in _SHELL_RESERVED and not _has_field(words[0]):
            words.pop(0)
        if words and _lead_text(words[0]) in ("for", "case", "select", "function"):
            return  # their words are names and patterns; the commands come after ; or )
        if words:
            commands.append((words, fed, piped, writes))

    def redirection(word):
        """A redirection's target when it writes a file (`> FILE`, `>> FILE`, `&> FILE`), else None."""
        at = 0
        while at < len(word) and isinstance(word[at], str) and word[at] in ("<", ">", "&", "|", "-"):
            at += 1
        return word[at:] if ">" in word[:at] and word[at:] and "&" not in word[1:at] else None

    def end_word(word, skip):
        if word and not skip:
            words.append(word)
        elif word and redirection(word):
            writes.append(redirection(word))
    for kind, value, quote, raw in tokens:
        plain = kind == "t" and quote is None and raw == value
        previous, last = last, raw
        if plain and value in "<>" and not ops:
            fed = fed or value == "<"
            if word and not _has_field(word) and "".join(word).isdigit():
                word = []  # the 2 of 2>
            end_word(word, skip)
            word, skip, ops = [value], True, True
            continue
        if ops:
            if plain and value in "<>&|-":
                word.append(value)
                continue
            if kind == "s" and value != "\n":
                continue  # `> file`: the target follows
            ops = False
        if kind == "s" or (plain and value in "|&;()"):
            end_word(word, skip)
            word, skip = [], False
            if value in "\n|&;()":
                end_command(words, fed, piped, writes)
                words, writes = [], []
                fed = piped = value == "|" != previous or previous + value == "|&"  # not ||; bash's |&
            continue
        word.append("" if kind == "q" else value)
    end_word(word, skip)
    end_command(words, fed, piped, writes)
    return commands


def _path_key(word):
    """A literal word as a file it names (`./p.sh` and `p.sh` are one file)."""
    return os.path.normpath(_lead_text(word)) if not _has_field(word) else None


def _written_then_run(commands):
    """Why a field's value is written to a file that a later command runs as code (`echo {x} > p.sh; sh p.sh`,
    `... | tee p.awk; awk -f p.awk`), or None: each later word naming such a file is walked as if it held the
    field. A file's data is the field's when its writer holds a field or is piped from a command that does."""
    written = {}  # the file's text -> (the field whose value it holds, the file as written)
    carried = False
    for command, _, piped, writes in commands:
        if written:
            shown = [[written[_path_key(word)][0]] if not _has_field(word) and _path_key(word) in written else word
                     for word in command]
            if shown != command and not _CodeCheck(command).problem:
                problem = _CodeCheck(shown).problem
                if problem:
                    name = next(w for w in command if not _has_field(w) and _path_key(w) in written)
                    return "`%s` is written to `%s`, which a later command runs as code: %s" % (
                        _first_field([written[_path_key(name)][0]]), _lead_text(name), problem)
        field = next((piece for word in command for piece in word if not isinstance(piece, str)), None)
        carried = field or (carried if piped else None)
        if carried:
            targets = list(writes) + ([word for word in command[1:] if not _lead_text(word).startswith("-")]
                                      if _program(_lead_text(command[0])) == "tee" else [])
            for target in targets:
                if not _has_field(target):
                    written[_path_key(target)] = (carried, target)
    return None


def check_code_fields(words, shell_tokens=None):
    """Refuse a field where its value would be code, or would choose the program.

    `words` is one command; `shell_tokens` (a "shell": true script) is walked
    command by command instead. Returns why a stdin template's fields would be
    code or options (`sh` reads its program there, `xargs` makes arguments), or "".
    """
    commands = _shell_commands(shell_tokens) if shell_tokens is not None else [(words, False, False, [])]
    names, text = [], ""
    for kind, value, quote, raw in shell_tokens or ():
        if kind in "fg":
            names.append(_first_field([value]))
            if quote != "'" and re.search(r"\$\{(?![\w#]*:?[-=+?])[^}]*$|\(\((?:(?!\)\)).)*$", text, re.S):
                raise TemplateError("`%s` stands inside ${...} or ((...)) (`%s`), where bash, the sh of macOS, reads "
                                    "an offset, a length, a subscript or arithmetic, so a value could run any command "
                                    "(a[$(cmd)] runs cmd). Pass it as its own word, or as ${name:-{%s}}"
                                    % (names[-1], text[-30:] + raw, names[-1]), None, None)
        text += raw
    stdin_code = ""
    problem = _written_then_run(commands)
    if problem:
        raise TemplateError(problem, None, None)
    for command, fed, _, _ in commands:
        check = _CodeCheck(command)
        if check.problem:
            raise TemplateError(check.problem, None, None)
        if fed and check.stdin_code and names:
            raise TemplateError("`%s` is in a script that pipes or redirects into a program where %s, so a value "
                                "could become that code or those options. Pass values to that program as its own "
                                "arguments" % (names[0], check.stdin_code), None, None)
        stdin_code = stdin_code or check.stdin_code
    return stdin_code


# --------------------------------------------------------------------------
# Templates: parse once, describe as a JSON schema, render to argv
# --------------------------------------------------------------------------

def render_words(words, arguments, allow_dash_values, ends=()):
    """Render parsed words (lists of pieces) to argv; see Template.render.

    The guard judges a word as rendered (`{a}-{b}` with `a` empty is `-{b}`)
    and also refuses a leading `+` or `@` where a program on the line reads them. A `--`
    frees the words after it only when a field's word follows it directly
    (`env -- git log {rev}`: that `--` was env's). `ends` holds the indexes of words after
    which a shell script's command ends, and with it what a `--` said.
    """
    argv = []
    after_double_dash = False
    signs = ("-",) + tuple({"vi": "+", "curl": "@", "javac": "@", "java": "@", "gcc": "@", "clang": "@"}.get(
        _program(_lead_text(word)), "-") for word in words)  # vim +COMMAND, curl -d @FILE, gcc @ARGFILE
    for index, pieces in enumerate(words):
        if index - 1 in ends:
            after_double_dash = False  # a new command of a shell script: its own options
        if len(pieces) == 1 and isinstance(pieces[0], Field) and pieces[0].kind == "array":
            argv.extend(_text(v) for v in arguments.get(pieces[0].key) or ())
            continue
        parts = []
        lead, present = _render_pieces(pieces, arguments, parts)
        if not present:
            continue  # nothing in the word was given: the word goes
        word = "".join(parts)
        if (isinstance(lead, Field) and word.startswith(signs) and not after_double_dash
                and not allow_dash_values and not _NUMBER.fullmatch(word)):
            value, fields = _clip(word, 40), Group(pieces).fields  # the first value given is the one to blame
            raise ToolError("`%s` starts with '%s' (%r), so the command would read it as an option (or a file to "
                            "read options or data from), not as a value. Pass a value that does not start with it (a "
                            "path can be written ./%s)."
                            % (next((f.name for f in fields if arguments.get(f.key)), fields[0].name), word[0], value,
                               value))
        if pieces == ["--"] and index + 1 < len(words) and _has_field(words[index + 1]):
            after_double_dash = True
        argv.append(word)
    return argv


class Template:
    """A command template, parsed once into words of text and fields.

    Grammar of one word (the shell, or the config loader, has already split
    the command into words)::

        word   ::= piece*
        piece  ::= field | flag | group | escape | char
        field  ::= '{' spec '}' | '{{' spec '}}'      (required)
                 | '[' spec ']'                      (optional)
        spec   ::= NAME ['...'] [ '#' description ]   ('...' makes an array)
        flag   ::= '[' '-' ['-'] NAME [ '#' description ] ']'   (optional boolean)
        group  ::= '[' piece* ']'   (holds a field; kept only when all its fields are given)
        escape ::= '\\' ( '{' | '}' | '[' | ']' | '\\' )       (the character itself)
        NAME   ::= [A-Za-z_][A-Za-z0-9_-]*

    Anything that is not a field stays literal text, so JSON (`{"a":1}`),
    `{ }` and most regexes need no escaping; `\\[a-z]` keeps a bracket
    expression that would otherwise read as an optional field. A group such
    as `[--voice={voice}]` makes its fields optional and drops its text too
    when they are not given.
    """

    def __init__(self, words):
        if not words or not words[0].strip():
            raise TemplateError("the %s: give a command, e.g. echo \"{message}\""
                                % ("command is empty or blank" if words else "template is empty"))
        self.source = list(words)
        self.fields = {}         # key -> Field, merged over every use
        self.words = [self._parse_word(word, index) for index, word in enumerate(words)]  # lists of str and Field pieces
        if any(not isinstance(p, str) for p in self.words[0]):
            raise TemplateError("the command (the first word) must be literal text, never a field", 0, self.source)
        self.stdin_code = check_code_fields(self.words)  # why stdin would be code here, or ""

    def _parse_word(self, word, index, in_group=False):
        pieces, text, i = [], [], 0
        while i < len(word):
            char = word[i]
            if char == "\\" and i + 1 < len(word) and word[i + 1] in _ESCAPABLE:
                text.append(word[i + 1])
                i += 2
                continue
            piece, end = None, i
            if char in "{[":
                piece, end = self._piece_at(word, i, index, in_group,
                                            lambda message: TemplateError(message, index, self.source))
            if not piece:
                text.append(char)
                i += 1
                continue
            if text:
                pieces.append("".join(text))
                text = []
            pieces.append(piece)
            i = end
        if text:
            pieces.append("".join(text))
        return pieces

    def _piece_at(self, text, i, index, optional, error):
        """The field or group that text[i] (a `{` or `[`) starts, and the index after it; else (None, i).
        `error(message)` makes the error of a field inside a field."""
        match = _FIELD.match(text, i)
        if match:
            _refuse_nested(text, i, match, error)
            return self._field(match, index, optional), match.end()
        if _FIELD_START.match(text, i):
            raise self._bad_description(text, i, index)
        close = _closing_bracket(text, i) if text[i] == "[" else 0
        inner = self._parse_word(text[i + 1:close], index, True) if close else []
        if any(not isinstance(p, str) for p in inner):
            return Group(inner), close + 1
        return None, i

    def _bad_description(self, text, at, index) -> TemplateError:
        name = _FIELD_START.match(text, at).group(1)
        return TemplateError("the field `%s` is not closed, or its description contains { } [ or ], "
                             "which a description may not" % name, index, self.source)

    def _field(self, match, index, optional) -> Field:
        group = match.groupdict()
        if group["flag"]:
            flag = group["flag"]
            field = Field(flag.lstrip("-"), "boolean", False, group["df"], flag)
        else:
            for n, required in (("1", True), ("2", True), ("3", False)):
                if group["n" + n]:
                    kind = _KINDS.get(group["a" + n], "string")
                    field = Field(group["n" + n], kind, required and not optional, group["d" + n],
                                  in_group=optional)
                    break
        known = self.fields.get(field.key)
        if not known:
            self.fields[field.key] = Field(field.name, field.kind, field.required, field.description, field.flag)
            return field
        if known.kind != field.kind:
            raise TemplateError(
                "`%s` is used as %s %s and as %s %s; a name used twice must be the same kind"
                % (field.key, _article(known.kind), known.kind, _article(field.kind), field.kind),
                index, self.source)
        if field.kind == "boolean" and known.flag != field.flag:
            raise TemplateError("`%s` stands for both %s and %s" % (field.key, known.flag, field.flag),
                                index, self.source)
        known.required = known.required or field.required
        known.description = known.description or field.description
        return field

    # -- what a client sees --------------------------------------------------

    def input_schema(self):
        """The JSON schema of the arguments, one property per field."""
        properties = {key: f.schema() for key, f in self.fields.items() if f.kind != "folder"}
        for key, field in self.fields.items():  # booleans and arrays say what they do when nobody did
            if key not in properties or "description" in properties[key] or field.kind == "string":
                continue
            properties[key]["description"] = (
                "true adds `%s` to the command; false leaves it out." % field.flag if field.kind == "boolean" else
                "A list of values; each becomes one argument of the command."
                if any(len(word) == 1 and getattr(word[0], "key", None) == key for word in self.words) else
                "A list of values, joined with commas where the template puts it.")
        return object_schema(properties, [key for key in properties if self.fields[key].required])

    def folder(self):
        """The `{name:folder}` field, whose value is a fresh folder the command's files come back from; or None."""
        return next((key for key, field in self.fields.items() if field.kind == "folder"), None)

    def display(self):
        """The template as a person reads it, without field descriptions."""
        out = []
        for pieces in self.words:
            word = "".join(_piece_text(p) for p in pieces)
            out.append(word if word and not re.search(r"\s", word) else json.dumps(word))
        return " ".join(out)

    def command_name(self):
        """The base name of the command word: `/usr/bin/git-lfs` gives `git-lfs`."""
        first = "".join(p for p in self.words[0] if isinstance(p, str))
        base = re.split(r"[\\/]", first)[-1]
        stem, ext = os.path.splitext(base)
        return (stem if stem and ext else base) or "command"

    # -- calls ------------------------------------------------------------------

    def render(self, arguments, allow_dash_values=False):
        """Render validated `arguments` to an argv list (no shell, no re-substitution).

        Raises ToolError when a scalar value would begin an argument with `-`
        (it would be read as an option) and the template has no `--` before it.
        """
        return render_words(self.words, arguments, allow_dash_values)


# --------------------------------------------------------------------------
# Frontmatter: the YAML subset of a SKILL.md header, parsed without a library
# --------------------------------------------------------------------------
# A skill's entry carries its frontmatter "rendered verbatim as JSON": what a
# YAML 1.2 parser (core schema) gives. This reads the subset authors write and
# refuses the rest with a line and a reason, so a wrong value is never served:
#
#   block    ::= mapping | sequence          (by indentation; tabs never indent)
#   mapping  ::= ( key ":" value )+          key: plain or quoted, text only, unique
#   sequence ::= ( "-" value )+              "- k: v" starts a mapping in the item
#   value    ::= plain | 'single' | "double" | ( "|" | ">" ) [+-][1-9] lines
#              | "[" flow, ... "]" | "{" key: flow, ... "}" | block | (nothing: null)
#   comments ::= "#" at a line's start or after a blank
# Plain scalars may continue on more-indented lines (folded with spaces) and
# resolve as the core schema says: null, ~, true/false (three spellings), ints
# (0o, 0x), floats. Anchors, aliases, tags, `?` keys, .inf and .nan are refused.

FRONTMATTER_MAX_CHARS = 64 << 10  # a frontmatter's size and nesting (a skill past them is refused)
FRONTMATTER_MAX_DEPTH = 32

_YAML_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
                 "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0",
                 "L": "\u2028", "P": "\u2029", "x": 2, "u": 4, "U": 8}


_YAML_BLANKS = r"[ \t]*\n[ \t\n]*|[ \t]+"  # in a quoted value: a line break with the blanks around it, or blanks
_FLOW_SPACE = re.compile(r"(?:[ \t\n]|(?<![^ \t\n])#[^\n]*)*")  # a comment starts the text or follows a blank
_FLOW_PLAIN = re.compile(r"(?:[^,\[\]{}:#\n]|:(?![ \t\n,\[\]{}])|(?<![ \t\n])#|\n)+")


def split_frontmatter(text):
    """(frontmatter lines, the file line number of the first) of a SKILL.md that opens with `---`."""
    lines = text[1:].split("\n") if text.startswith("\ufeff") else text.split("\n")
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if lines[0] != "---":
        raise FrontmatterError("SKILL.md must begin with a `---` line, then YAML frontmatter, then `---`", 1)
    for end in range(1, len(lines)):
        if lines[end].rstrip(" \t") == "---":
            if sum(map(len, lines[1:end])) > FRONTMATTER_MAX_CHARS:
                raise FrontmatterError("the frontmatter is longer than %d characters; move text to the body"
                                       % FRONTMATTER_MAX_CHARS, 2)
            return lines[1:end], 2
    raise FrontmatterError("the frontmatter has no closing `---` line", 1)


def yaml_scalar(text):
    """A plain scalar by the core schema: null, booleans, ints, floats, else the text itself."""
    if text in ("", "~", "null", "Null", "NULL"):
        return None
    if text in ("true", "True", "TRUE", "false", "False", "FALSE"):
        return text[0] in "tT"
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text)
    if re.fullmatch(r"0o[0-7]+|0x[0-9a-fA-F]+", text):
        return int(text, 0)
    if re.fullmatch(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?", text):
        value = float(text)
        if value - value:  # inf - inf is nan: too large for a float
            raise ValueError("%s is too large for a JSON number; quote it to mean the text" % text)
        return value
    if re.fullmatch(r"[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)", text):
        raise ValueError("%s has no JSON value; quote it to mean the text" % text)
    return text


def _item(text):
    """Whether a line's text (from its indentation on) starts a `-` sequence item."""
    return text[:2] in ("- ", "-\t") or text == "-"


def _blank_or_comment(text):
    """Whether a line's text (or what is left of it) is blanks only or a comment: nothing to read."""
    return text.strip(" \t")[:1] in ("", "#")


class _Yaml:
    """One frontmatter's lines, read top to bottom (see the grammar above)."""

    def __init__(self, lines, first):
        self.lines = list(lines)
        self.first = first
        self.i = 0
        self.depth = 0
        self.text = "\n".join(self.lines)  # what a flow value reads, at self.starts[line] + column
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line) + 1)

    def nest(self, step):
        """Into (1) or out of (-1) a collection: FRONTMATTER_MAX_DEPTH levels at most."""
        self.depth += step
        if self.depth > FRONTMATTER_MAX_DEPTH:
            raise self.error("nested deeper than %d levels" % FRONTMATTER_MAX_DEPTH)

    def error(self, message, index=None):
        return FrontmatterError(message, self.first + (self.i if index is None else index))

    def indent(self, index):
        line = self.lines[index]
        n = len(line) - len(line.lstrip(" "))
        if line[n:n + 1] == "\t":
            raise self.error("a tab in the indentation; indent with spaces", index)
        return n

    def skip(self):
        """Past blank and comment lines."""
        while self.i < len(self.lines) and _blank_or_comment(self.lines[self.i]):
            self.i += 1

    def document(self):
        self.skip()
        if self.i == len(self.lines):
            return None
        value = self.block(self.indent(self.i))
        self.skip()
        if self.i < len(self.lines):
            raise self.error("this line does not belong to the block above it (check its indentation)")
        return value

    def block(self, n):
        """The mapping or sequence whose lines start at column `n`."""
        text = self.lines[self.i][n:]
        self.nest(1)
        value = self.sequence(n) if _item(text) else self.mapping(n)
        self.nest(-1)
        return value

    def more(self, n, rule):
        """Past blank and comment lines: whether a line at column `n` comes next (one deeper breaks `rule`)."""
        self.skip()
        if self.i < len(self.lines) and self.indent(self.i) > n:
            raise self.error("unexpected indentation (%s above it)" % rule)
        return self.i < len(self.lines) and self.indent(self.i) == n

    def mapping(self, n):
        result = {}
        while self.more(n, "a key lines up with the keys"):
            key, col = self.key(n)
            if key in result:
                raise self.error("the key `%s` appears twice" % key)
            result[key] = self.value(col, n, True)
        return result

    def sequence(self, n):
        result = []
        while self.more(n, "an item lines up with the items"):
            line = self.lines[self.i]
            if not _item(line[n:]):
                return result  # `key:` then items at the key's own indentation, then the next key
            rest = line[n + 1:]
            col = n + 1 + len(rest) - len(rest.lstrip(" "))
            text = line[col:]
            if not _blank_or_comment(text) and (_item(text) or self.is_key(text)):
                self.lines[self.i] = " " * col + text  # `- k: v` / `- - x`: a block starting at the item's text
                result.append(self.block(col))
            else:
                result.append(self.value(col, n, False))
        return result

    def is_key(self, text):
        if text[:1] in "\"'":
            try:
                end = self.quoted(text, 0)[1]
            except FrontmatterError:
                return False
            return bool(re.match(r"[ \t]*:([ \t]|$)", text[end:]))
        match = re.search(r":(?=[ \t]|$)", text)
        return bool(match) and not re.search(r"[ \t]#", text[:match.start()]) and text[:1] not in "[{#"

    def key(self, n):
        """The key of the mapping line at column `n`, and the column after its `:`."""
        text = self.lines[self.i][n:]
        if text[:1] == "?" and text[1:2] in ("", " "):
            raise self.error("`?` keys are not supported; write `key: value`")
        if not self.is_key(text):
            raise self.error("expected `key: value`%s" % (
                " (a `-` item where keys are expected)" if text[:1] == "-" else ""))
        if text[:1] in "\"'":
            key, end = self.quoted(text, 0)
            return key, n + text.index(":", end) + 1
        colon = re.search(r":(?=[ \t]|$)", text).start()
        raw = text[:colon].rstrip(" \t")
        self.plain_start(raw)
        key = self.scalar(raw)
        if not isinstance(key, str):
            raise self.error("the key `%s` is a %s in YAML; keys must be text: quote it" % (
                raw, "null" if key is None else type(key).__name__))
        return key, n + colon + 1

    def scalar(self, text, index=None):
        """yaml_scalar(text); its refusal an error of the current line (or of line `index`)."""
        try:
            return yaml_scalar(text)
        except ValueError as exc:
            raise self.error(str(exc), index)

    def plain_start(self, text):
        if not text:
            raise self.error("an empty key or value where text was expected")
        if text[0] in "&*!%@`|>#" or (text[0] in "?:-" and text[1:2] in ("", " ", "\t")):
            what = {"&": "anchors", "*": "aliases", "!": "tags", "%": "directives"}.get(text[0])
            raise self.error("%s are not supported in frontmatter" % what if what else
                             "`%s` cannot start a plain value; quote the value" % text[0])

    def value(self, col, n, in_mapping):
        """The value that starts at column `col` of the current line, under a key or dash at column `n`."""
        line = self.lines[self.i]
        text = line[col:].lstrip(" \t")
        col = len(line) - len(text)
        if _blank_or_comment(text):  # the value is on the lines below, or null
            self.i += 1
            self.skip()
            if self.i < len(self.lines):
                below = self.indent(self.i)
                rest = self.lines[self.i][below:]
                dash = _item(rest)
                if below > n and not dash and not self.is_key(rest):
                    return self.inline(below, n)
                if below > n or (below == n and in_mapping and dash):
                    return self.block(below)
            return None
        return self.inline(col, n)

    def inline(self, col, n):
        """A scalar or flow value starting at column `col` of the current line."""
        text = self.lines[self.i][col:]
        if text[0] in "|>":
            return self.block_scalar(text, n)
        if text[0] in "[{\"'":
            return self.flow_value(col)
        if _item(text):
            raise self.error("a `-` list cannot start on the key's line; put its items on the lines below")
        return self.plain(text, n)

    def plain(self, text, n):
        """A plain scalar, continued on more-indented lines."""
        self.plain_start(text)
        parts, start = [], self.i
        while True:
            cut = re.search(r"[ \t]#", text)  # a comment ends the value
            text = text[:cut.start()] if cut else text
            if re.search(r":[ \t]|:$", text):
                raise self.error("`: ` inside a plain value; quote the value")
            parts.append(text.strip(" \t"))
            self.i += 1
            if cut:
                break
            blanks = 0
            while self.i + blanks < len(self.lines) and not self.lines[self.i + blanks].strip(" \t"):
                blanks += 1
            at = self.i + blanks
            if at == len(self.lines) or self.lines[at].strip(" \t")[:1] == "#" or self.indent(at) <= n:
                break
            parts.append("\n" * blanks or " ")
            self.i = at
            text = self.lines[at]
        raw = "".join(parts)
        return self.scalar(raw, start) if len(parts) == 1 else raw

    def block_scalar(self, header, n):
        """A `|` (literal) or `>` (folded) scalar: its indicators, then the lines below."""
        match = re.fullmatch(r"([|>])([-+]?)([1-9]?)([-+]?)([ \t]+#.*)?[ \t]*", header)
        if not match or (match.group(2) and match.group(4)):
            raise self.error("after `%s` only a chomping indicator (- or +), an indentation digit and a "
                             "comment may follow" % header[0])
        folded, chomp = match.group(1) == ">", match.group(2) or match.group(4)
        indent = n + int(match.group(3)) if match.group(3) else None
        rows, lead = [], 0  # text of each line ("" for an empty one: no other is); the longest leading empty line
        self.i += 1
        while self.i < len(self.lines):
            line = self.lines[self.i]
            spaces = len(line) - len(line.lstrip(" "))
            if not line.strip(" ") and (indent is None or spaces <= indent):
                rows.append("")
                lead = max(lead, spaces) if indent is None else lead
            else:
                if indent is None:
                    if spaces <= n:
                        break
                    if lead > spaces:
                        raise self.error("a leading empty line is longer than the first line's indentation; "
                                         "give the indentation after `%s` (e.g. %s2)" % (header[0], header[0]))
                    indent = spaces
                if spaces < indent:
                    break
                rows.append(line[indent:])
            self.i += 1
        trailing = 0
        while rows and not rows[-1]:  # trailing empty lines are kept only by `+`
            rows.pop()
            self.i -= 1
            trailing += 1
        if not rows:
            return "\n" * trailing if chomp == "+" else ""
        text = "\n".join(rows)
        if folded:  # a line break between two lines that are not more indented: a space, or one of several goes
            text = re.sub(r"^([^ \t\n].*)\n(\n*)(?=[^ \t\n])", lambda match: match.group(1) + (match.group(2) or " "),
                          text, flags=re.M)
        return text + {"-": "", "+": "\n" * (trailing + 1)}.get(chomp, "\n")

    def flow_value(self, col):
        """A quoted scalar or a [ ] / { } collection, which may run over several lines."""
        text, start = self.text, self.starts[self.i] + col
        value, end = self.flow_node(text, start)  # a quote, [ or {
        self.i += text.count("\n", start, end)
        rest = text[end:self.starts[self.i + 1] - 1]
        if not _blank_or_comment(rest) or rest[:1] == "#":
            raise self.error("unexpected text after the value: %s" % rest.strip())
        self.i += 1
        return value

    def quoted(self, text, j):
        """A 'single' or "double" quoted scalar starting at text[j]: (value, index after it)."""
        quote = text[j]
        closed = re.compile(r"'((?:[^']|'')*)'(?!')" if quote == "'" else r'"((?:[^"\\]|\\.)*)"', re.S).match(text, j)

        def replace(found):
            piece = found.group()
            if piece[0] != "\\":  # a line break folds to a space, each empty line to a newline
                return "\n" * (piece.count("\n") - 1) or " " if "\n" in piece else piece
            if piece[1:2] == "\n":  # an escaped line break joins the lines
                return ""
            code = _YAML_ESCAPES.get(piece[1:2])
            if code is None:
                raise self.error("unknown escape \\%s in a double-quoted value" % piece[1:2])
            if isinstance(code, int):
                if not re.fullmatch(r"[0-9a-fA-F]{%d}" % code, piece[2:]) or int(piece[2:], 16) > 0x10FFFF:
                    raise self.error("\\%s needs %d hex digits of a code point" % (piece[1], code))
                code = chr(int(piece[2:], 16))
            return code
        escapes = r"\\\n[ \t]*|\\(?:x.{0,2}|u.{0,4}|U.{0,8}|.?)|" if quote == '"' else ""
        value = re.sub(escapes + _YAML_BLANKS, replace, closed.group(1) if closed else text[j + 1:], flags=re.S)
        if not closed:
            raise self.error("a %s-quoted value has no closing %s" % ("double" if quote == '"' else "single", quote))
        return value.replace("''", "'") if quote == "'" else value, closed.end()

    def flow(self, text, j):
        """A [ ] or { } collection starting at text[j]: (value, index after it)."""
        closing = "]" if text[j] == "[" else "}"
        result = [] if closing == "]" else {}
        j += 1
        self.nest(1)
        while True:
            j = self.flow_space(text, j)
            if text[j:j + 1] == closing:
                self.nest(-1)
                return result, j + 1
            value, j = self.flow_node(text, j)
            j = self.flow_space(text, j)
            if closing == "]":
                if text[j:j + 1] == ":":
                    raise self.error("a `key: value` pair inside [ ]; write it as {key: value}")
                result.append(value)
            else:
                if not isinstance(value, str):
                    raise self.error("a key inside { } must be text; quote it")
                key, value = value, None
                if text[j:j + 1] == ":":
                    j = self.flow_space(text, j + 1)
                    if text[j:j + 1] not in (",", "}"):
                        value, j = self.flow_node(text, j)
                        j = self.flow_space(text, j)
                if key in result:
                    raise self.error("the key `%s` appears twice" % key)
                result[key] = value
            if text[j:j + 1] == ",":
                j += 1
            elif text[j:j + 1] != closing:
                raise self.error("expected `,` or `%s` in a flow collection, not %s" % (
                    closing, repr(text[j]) if j < len(text) else "the end of the frontmatter"))

    def flow_space(self, text, j):
        """The index past the blanks, line breaks and comments at text[j]."""
        return _FLOW_SPACE.match(text, j).end()

    def flow_node(self, text, j):
        if j >= len(text) or text[j] in ",]}":
            raise self.error("an empty entry in a flow collection")
        if text[j] in "[{":
            return self.flow(text, j)
        if text[j] in "\"'":
            return self.quoted(text, j)
        match = _FLOW_PLAIN.match(text, j)
        raw = match.group() if match else ""
        self.plain_start(raw.strip())
        return self.scalar(" ".join(part.strip(" \t") for part in raw.strip(" \t\n").split("\n"))), j + len(raw)


def parse_frontmatter(text):
    """A SKILL.md's frontmatter as JSON-ready values; FrontmatterError outside the subset."""
    lines, first = split_frontmatter(text)
    value = _Yaml(lines, first).document()
    if value is None and not any(line.strip() and not line.lstrip().startswith("#") for line in lines):
        raise FrontmatterError("the frontmatter is empty; give it `name` and `description` lines", first)
    if not isinstance(value, dict):
        raise FrontmatterError("the frontmatter must be `key: value` lines", first)
    return value


# --------------------------------------------------------------------------
# Processes: the one way a child process starts
# --------------------------------------------------------------------------
# The one platform check. POSIX: each child leads a new session (its own
# process group, no controlling terminal), so a timeout, a cancellation or
# shutdown can stop it together with everything it started. Windows: a new
# process group and a Job object of its own (which holds what it starts, also
# after it exited), joined while the child is still suspended, before it runs;
# CTRL_BREAK_EVENT where there is a console, then the job
# ended (else `taskkill /T /F`). A bare program name is looked up as a batch
# file too (npx -> npx.cmd), which exec_problem's batch rule then guards; a
# script is run as Windows users have them (script_argv). Whether a command
# waits reading its stdin (a question) is seen on Linux, taken as so on macOS
# while it runs, and cannot be seen on Windows (_reading is None there).
# CI tests Linux, and Windows under Wine (.ci/windows: no console there, so no
# CTRL_BREAK, and no taskkill /T); macOS takes the POSIX path.
# Outside this block code asks only `_POSIX`, never os.name or sys.platform, for what differs in one
# line (the batch rule's default, the #! hint, a did-you-mean's program names and cmd.exe's built-ins,
# Claude Desktop's PATH, script options as variables, private files' owner and mode); client_config_path
# takes the platform of the client's machine as an argument, to be tested for each.

def find_program(argv, env):
    """`argv` with a program named without a folder replaced by the file a shell would run:
    npx -> C:\\...\\npx.cmd, git -> C:\\...\\git.exe.

    Windows' CreateProcess appends only .exe to a name without an extension,
    never reads PATHEXT, and looks in the current folder before PATH: `npx`,
    `npm` or `code` (.cmd shims) would not start, and a git.exe in a cloned
    project would run before the one on PATH. So the child's PATH (its
    absolute folders, in order) is searched: for the name as given when it has
    an extension CreateProcess can start, else with each such extension of
    PATHEXT. A name with a folder, or found nowhere on PATH, is left to
    CreateProcess. Used on Windows only (see _resolve_program)."""
    name = argv[0] if argv else None
    if not isinstance(name, str) or not name or os.path.dirname(name):
        return argv
    startable = (".com", ".exe", ".bat", ".cmd")
    variables = {key.upper(): value for key, value in (os.environ if env is None else env).items()}
    extension = os.path.splitext(name)[1].lower()
    if extension:
        names = [name] if extension in startable else []
    else:
        extensions = variables.get("PATHEXT", ".COM;.EXE;.BAT;.CMD").lower().split(";")
        names = [name + extension for extension in extensions if extension in startable]
    for folder in variables.get("PATH", "").split(os.pathsep):
        folder = folder.strip().strip('"')
        if not os.path.isabs(folder):
            continue  # a relative folder would be looked up from the child's folder, not ours
        for candidate in names:
            path = os.path.join(folder, candidate)
            if os.path.isfile(path):
                return [path] + list(argv[1:])
    return argv


def script_argv(path, windows, python=None, pathext=None):
    """The words that run the script `path` in script mode, or None when it is not a script there.

    POSIX runs the file itself, by its #! line (the caller checks its execute
    bit). Windows has neither: an extension says what runs a file. A .exe,
    .com, .bat or .cmd (when in `pathext`, the PATHEXT variable) runs itself,
    a batch file under the batch rule; a .py runs with `python`, the Python
    that runs mcpstudio (the py launcher when that is not known), so a .py
    needs no file association; a .ps1 with Windows PowerShell, past the
    default policy that runs no script file (a policy set by Group Policy
    still rules). Anything else (.js, .vbs: they need a host) is not a
    script; a .cmd that runs it is. Pure, for tests on any platform
    (_script_argv asks this with the platform's answer)."""
    if not windows:
        return [path]
    extension = os.path.splitext(path.rstrip(". "))[1].lower()  # Windows ignores trailing dots and spaces
    if extension == ".py":
        return [python, path] if python else ["py", "-3", path]
    if extension == ".ps1":
        return ["powershell", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-File", path]
    if extension in (".com", ".exe", ".bat", ".cmd") and extension in (pathext or ".COM;.EXE;.BAT;.CMD").lower().split(";"):
        return [path]
    return None


_CMD_QUOTED = re.compile(r'[\s"&|<>^%(),;=!]')  # a word holding one goes in double quotes for cmd.exe


def windows_command_line(argv):
    """`argv` as one line to paste into cmd.exe, split back into `argv` by the Microsoft C runtime's rules (what
    a Windows program reads): an empty word, or one with a blank, a quote or a character cmd.exe acts on, goes
    in double quotes, `"` written `\\"` and the backslashes before a quote (or the closing quote) doubled, as
    subprocess.list2cmdline does. cmd.exe knows no `\\"`: each `"` turns its quoting on or off, so a `&`, `|`,
    `<`, `>`, `^`, `(` or `)` that falls outside its quoting (after a `\\"`) gets a `^`, which cmd.exe drops;
    that quoting goes on across blanks, so it is followed over the whole line, not word by word.
    (A `%NAME%` naming a set variable is expanded by cmd.exe even inside quotes: docs/platforms.md.)"""
    words, inside = [], False  # whether cmd.exe reads the line inside quotes here
    for word in map(str, argv):
        if word and not _CMD_QUOTED.search(word):
            words.append(word)
            continue
        quoted = '"%s"' % re.sub(r"(\\*)\Z", r"\1\1", re.sub(r'(\\*)"', lambda m: m.group(1) * 2 + '\\"', word))
        shown = []
        for char in quoted:
            if char == '"':
                inside = not inside
            elif not inside and char in "&|<>^()":
                shown.append("^")
            shown.append(char)
        words.append("".join(shown))
    return " ".join(words)


if _POSIX:
    _SPAWN_OPTIONS = {"start_new_session": True}

    def _group_spawn_options():
        return _SPAWN_OPTIONS  # the child leads its session before it runs anything

    def _group_started(pid):
        pass  # the new session it leads is its group

    def _group_done(pid):
        pass

    def _signal_group(pid, hard):
        """Signal the process group `pid` leads; False when nothing is left in it."""
        try:
            os.killpg(pid, signal.SIGKILL if hard else signal.SIGTERM)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def _group_alive(pid):
        """Whether a process of group `pid` still runs. An orphan is a zombie until init reaps it, and
        an init slow to reap (a container's) would hold every stop for the whole grace period: on Linux
        a group of zombies only is gone."""
        try:
            os.killpg(pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        if not os.path.isdir("/proc/self"):
            return True
        for name in os.listdir("/proc"):
            try:
                with open("/proc/%s/stat" % name, "rb") as f:
                    state, _, group = f.read().rpartition(b")")[2].split()[:3]
            except (OSError, ValueError):
                continue  # not a process, or gone meanwhile
            if group == b"%d" % pid and state != b"Z":
                return True
        return False

    def _reading(pid, group, stdin=None):
        """Whether `pid` (with `group`: a process of its group) sleeps reading a pipe (Linux tells; macOS cannot, so
        there it is taken as so while the group runs), and with `stdin` (a pattern of the pipe mcpstudio writes the
        command's input to, see _stdin_link) that pipe is its standard input: a `sleep 2 | cat` waits on its own pipe,
        which is no question. A whole group is looked through (some ms) only when the output ends in what may be a
        question."""
        if not os.path.isdir("/proc/self"):
            return _group_alive(pid)
        for entry in (_descendants(pid) or os.listdir("/proc")) if group else [pid]:
            try:
                with open("/proc/%s/stat" % entry) as stat, open("/proc/%s/wchan" % entry) as wchan:
                    if re.search(r"\) S \d+ %d " % pid, stat.read()) and wchan.read() in (
                            "0", "pipe_read", "anon_pipe_read", "unix_stream_read_generic") and (  # Python 3.8: a socket pair
                            stdin is None or re.fullmatch(stdin, os.readlink("/proc/%s/fd/0" % entry))):
                        return True  # sleeping (S), in the group; "0": a kernel that hides where processes sleep
            except OSError:
                pass
        return False

    def _descendants(pid, limit=1024):
        """`pid` and the processes under it, from Linux's /proc/PID/task/TID/children (the command's group, but for a
        process that left it for init), or None where the kernel does not list children: then every process is
        looked at."""
        found, todo = [], [pid]
        while todo and len(found) < limit:
            current = todo.pop()
            found.append(current)
            try:
                for task in os.listdir("/proc/%d/task" % current):
                    with open("/proc/%d/task/%s/children" % (current, task)) as f:
                        todo.extend(int(child) for child in f.read().split())
            except FileNotFoundError:
                if current == pid and os.path.isdir("/proc/%d" % pid):
                    return None  # no children files in this kernel
            except OSError:
                pass
        return found

    def _stdin_link(pipe):
        """What /proc/PID/fd/0 of a process reading the pipe under an asyncio write transport reads, as a pattern:
        `pipe:[INODE]` (both ends share it); a socket of Python 3.8's socket pair (whose ends differ: any socket, as
        no pipe is it); None where it cannot be told."""
        try:
            info = os.fstat(pipe.get_extra_info("pipe").fileno())
        except (AttributeError, OSError, ValueError):
            return None
        return (re.escape("pipe:[%d]" % info.st_ino) if stat.S_ISFIFO(info.st_mode) else
                r"socket:\[\d+\]" if stat.S_ISSOCK(info.st_mode) else None)

    def _script_argv(path):
        """The words that run the script `path` (its execute bit and #! line), or None (see script_argv)."""
        return script_argv(path, windows=False) if os.access(path, os.X_OK) else None

    def _process_alive(pid):
        """Whether our process `pid` runs (PermissionError: the pid went to another user's process)."""
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False

    def _resolve_program(argv, env):
        return argv  # execvp searches the child's PATH itself

    def _one_spelling(env):
        return env  # Path and PATH are two variables here

    def _command_text(argv):
        import shlex
        return shlex.join(argv)  # for a POSIX shell

    def _variable(env, name):
        return env.get(name)

    _END_OF_INPUT = "Ctrl+D"
    _PYTHON = "python3"  # how a suggested command starts Python (macOS and most Linux have no `python`)

    def _local_text(data, cut):
        return None  # a command's output is UTF-8 or binary here: the locale of any system a client runs on

    def _open_appending(path, flags, mode):
        return os.open(path, flags, mode)  # another process may rename it while it is open (a rotation)

    def _cache_base():
        return os.path.expanduser("~/Library/Caches" if sys.platform == "darwin" else "~/.cache")

    def _text_stdout():
        pass  # print() writes the locale's encoding, UTF-8 on any system a client runs on

    def _writable_now(fd, size):
        """Whether a write of `size` bytes to `fd` would complete whole without blocking: at most
        PIPE_BUF (4096 on Linux, 512 on macOS, where a socket reads as writable with 2 KiB free)."""
        if size > getattr(select, "PIPE_BUF", 512):
            return False
        try:
            return bool(select.select([], [fd], [], 0)[1])
        except (OSError, ValueError):
            return False

    def _on_stop_signals(loop, stop, reload):
        """Call `stop(name)` on SIGTERM, SIGINT or SIGHUP; `reload()` on SIGHUP when given."""
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, stop, signal.Signals(signum).name)
        if reload:
            loop.add_signal_handler(signal.SIGHUP, reload)

    # A parent-death signal reaches only direct children, and nothing runs in
    # a process killed with SIGKILL; so a tiny separate process holds a pipe
    # from us, learns each process group we start ("+pid" / "-pid"), and when
    # the pipe closes (we exited or were killed) stops every group still
    # registered, and every process whose environment carries our marker
    # (WATCHDOG_ENV): children spawned in the instant before we could
    # register them, and grandchildren that left their group. SIGTERM, the
    # grace period, SIGKILL.
    def watchdog_main(grace, marker=""):
        """The watchdog process's program (see `_start_watchdog`); returns when its work is done."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        groups = set()
        for line in sys.stdin.buffer:  # until the pipe closes: we exited or were killed
            try:
                (groups.add if line[:1] == b"+" else groups.discard)(int(line[1:]))
            except ValueError:
                pass

        def signal_all(signum):
            """Send `signum` to every group and marked process; whether any still exists."""
            alive = False
            marked = _marked_processes(marker) if marker else []
            for pid, kill in [(pid, os.killpg) for pid in groups] + [(pid, os.kill) for pid in marked]:
                try:
                    kill(pid, signum)
                    alive = True
                except OSError:
                    pass
            return alive

        deadline = time.monotonic() + grace
        if signal_all(signal.SIGTERM):
            while signal_all(0) and time.monotonic() < deadline:
                time.sleep(0.05)
            for _ in range(5):  # again, for what was forked while we signalled
                if not signal_all(signal.SIGKILL):
                    break
                time.sleep(0.05)

    def _marked_processes(marker, use_proc=True):
        """Pids of processes whose environment holds WATCHDOG_ENV=marker: read from /proc
        (Linux), else from `ps axeww` (macOS; not tested in CI)."""
        token = ("%s=%s" % (WATCHDOG_ENV, marker)).encode()
        found, me = [], os.getpid()
        if use_proc and os.path.isdir("/proc/self"):
            for name in os.listdir("/proc"):
                if name.isdigit() and int(name) != me:
                    try:
                        with open("/proc/%s/environ" % name, "rb") as f:
                            if token in f.read().split(b"\0"):
                                found.append(int(name))
                    except OSError:
                        pass
            return found
        try:
            listing = subprocess.run(["ps", "axeww", "-o", "pid=,command="], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            return found
        for line in listing.splitlines():
            pid, _, rest = line.strip().partition(b" ")
            if pid.isdigit() and int(pid) != me and token in rest.split():
                found.append(int(pid))
        return found

    def _start_watchdog(grace, marker):
        """Start the watchdog; return it (see `_Watchdog`), or None if it cannot run."""
        if not sys.executable:
            return None
        folder = os.path.dirname(os.path.abspath(__file__))  # a folder, or a zipapp
        program = ("import sys; sys.path.insert(0, sys.argv[1]); import mcpstudio; "
                   "mcpstudio.watchdog_main(float(sys.argv[2]), sys.argv[3])")
        # Not carrying a marker of ours or of an mcpstudio above us, the watchdog is never its own target.
        env = {key: value for key, value in os.environ.items() if key != WATCHDOG_ENV}
        return _Watchdog(subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", program, folder, str(grace), marker], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True))

    class _Watchdog:
        """Our end of the watchdog's pipe."""

        def __init__(self, process):
            self.process = process

        def tell(self, sign, pid):
            self.process.stdin.write(b"%s%d\n" % (sign, pid))
            self.process.stdin.flush()

        def close(self):
            """End of input: the watchdog stops what is left and exits. Its exit is collected in a thread, so
            no zombie stays behind a process that goes on (the TUI, tests) and no Popen is dropped running."""
            self.process.stdin.close()
            threading.Thread(target=self.process.wait, name="mcpstudio-watchdog-exit", daemon=True).start()
else:  # pragma: windows (Windows CPython under Wine in .ci/windows; the README says what is tested where)
    _SPAWN_OPTIONS = {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}

    @functools.lru_cache(maxsize=None)  # made once: a stop polls its job every 20 ms
    def _kernel32():
        """kernel32 through ctypes, with the prototypes used here (a handle is 64 bits: never cut to an int)."""
        import ctypes
        from ctypes import wintypes
        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        handle = wintypes.HANDLE
        for name, result, arguments in (
                ("CreateJobObjectW", handle, (ctypes.c_void_p, wintypes.LPCWSTR)),
                ("SetInformationJobObject", wintypes.BOOL, (handle, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD)),
                ("QueryInformationJobObject", wintypes.BOOL,
                 (handle, ctypes.c_int, ctypes.c_void_p, wintypes.DWORD, ctypes.c_void_p)),
                ("AssignProcessToJobObject", wintypes.BOOL, (handle, handle)),
                ("TerminateJobObject", wintypes.BOOL, (handle, wintypes.UINT)),
                ("GetCurrentProcess", handle, ()),
                ("OpenProcess", handle, (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)),
                ("TerminateProcess", wintypes.BOOL, (handle, wintypes.UINT)),
                ("CloseHandle", wintypes.BOOL, (handle,)),
                ("GetConsoleCP", wintypes.UINT, ()),
                ("CreateFileW", handle, (wintypes.LPCWSTR, wintypes.DWORD, wintypes.DWORD, ctypes.c_void_p,
                                         wintypes.DWORD, wintypes.DWORD, handle))):
            function = getattr(kernel32, name)
            function.restype, function.argtypes = result, arguments
        return kernel32

    @functools.lru_cache(maxsize=None)
    def _nt_resume_process():
        """ntdll's NtResumeProcess(process handle) -> NTSTATUS (0: resumed), through ctypes (see _group_started)."""
        import ctypes
        from ctypes import wintypes
        function = ctypes.WinDLL("ntdll").NtResumeProcess
        function.restype, function.argtypes = ctypes.c_long, (wintypes.HANDLE,)
        return function

    def _kill_on_close_job(kernel32):
        """A new Job object that ends every process in it when its last handle closes; OSError if Windows refuses."""
        import ctypes
        from ctypes import wintypes

        class BasicLimits(ctypes.Structure):
            _fields_ = [("PerProcessUserTimeLimit", ctypes.c_int64), ("PerJobUserTimeLimit", ctypes.c_int64),
                        ("LimitFlags", wintypes.DWORD), ("MinimumWorkingSetSize", ctypes.c_size_t),
                        ("MaximumWorkingSetSize", ctypes.c_size_t), ("ActiveProcessLimit", wintypes.DWORD),
                        ("Affinity", ctypes.c_size_t), ("PriorityClass", wintypes.DWORD),
                        ("SchedulingClass", wintypes.DWORD)]

        class ExtendedLimits(ctypes.Structure):
            _fields_ = [("BasicLimitInformation", BasicLimits), ("IoInfo", ctypes.c_uint64 * 6),
                        ("ProcessMemoryLimit", ctypes.c_size_t), ("JobMemoryLimit", ctypes.c_size_t),
                        ("PeakProcessMemoryUsed", ctypes.c_size_t), ("PeakJobMemoryUsed", ctypes.c_size_t)]

        job = kernel32.CreateJobObjectW(None, None)
        if not job:
            raise ctypes.WinError(ctypes.get_last_error())
        limits = ExtendedLimits()
        limits.BasicLimitInformation.LimitFlags = 0x2000  # JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
        if not kernel32.SetInformationJobObject(job, 9, ctypes.byref(limits), ctypes.sizeof(limits)):  # Extended
            error = ctypes.WinError(ctypes.get_last_error())
            kernel32.CloseHandle(job)
            raise error
        return job

    # A child's process group, for stopping it, is a Job object of its own (inside this process's, see
    # _start_watchdog): it holds what the child starts, also after the child exited, where `taskkill /T`
    # finds nothing (and Wine's taskkill has no /T). Windows keeps no table of them as POSIX keeps process
    # groups, so this is that table: a child's pid -> its job's handle, from _group_started to _group_done
    # (ProcessRunner's _track and _forget).
    #
    # The child starts suspended (CREATE_SUSPENDED), joins its job, and only then runs: a grandchild it
    # starts at once is in the job too (joined just after it started, a batch file's cmd.exe could start its
    # program first, outside the job until mcpstudio exited: docs/platforms.md). Popen closes the handle of the
    # child's first thread, so it is resumed through its process handle: ntdll's NtResumeProcess, one call,
    # in every Windows since XP and in Wine (undocumented, but what Process Explorer and psutil resume a
    # process with). The documented way, a Toolhelp32 snapshot of every thread on the machine
    # (CreateToolhelp32Snapshot, Thread32First/Next) searched for the child's, then OpenThread and
    # ResumeThread, works under Wine too, but walks the whole system's threads for each command to find one.
    # A child that cannot join a job (no ctypes, no nested jobs on Windows 7) is resumed all the same and
    # stopped by taskkill /T; one that cannot be resumed is ended, not left suspended.
    _JOBS = {}

    @functools.lru_cache(maxsize=None)
    def _group_spawn_options():
        """Popen's options for a child _group_started then gives a Job object: a new process group, started
        suspended when this process can resume it (else as _SPAWN_OPTIONS: it joins just after it starts)."""
        try:
            _kernel32()
            _nt_resume_process()
        except (OSError, ImportError, AttributeError):  # AttributeError: an ntdll without NtResumeProcess
            return _SPAWN_OPTIONS
        return {"creationflags": _SPAWN_OPTIONS["creationflags"] | 0x4}  # CREATE_SUSPENDED

    def _group_started(pid):
        """Put the new child `pid` (started with _group_spawn_options) in a Job object of its own, then resume
        it; without a job (Windows 7 has no nested jobs, or ctypes is missing) taskkill /T at stop time is all
        there is."""
        try:
            kernel32 = _kernel32()
        except (OSError, ImportError):
            return  # then it was not started suspended either
        try:
            resume = _nt_resume_process()
        except (OSError, AttributeError):
            resume = None  # started running (_group_spawn_options): it joins its job now
        # PROCESS_TERMINATE | PROCESS_SET_QUOTA | PROCESS_SUSPEND_RESUME. Our own child, whose handle asyncio
        # holds: this does not fail (were it to, a suspended child would wait for its stop, at its timeout or
        # its call's cancellation, which ends it with taskkill /T /F).
        process = kernel32.OpenProcess(0x0901, False, pid)
        if not process:
            return
        try:
            try:
                job = _kill_on_close_job(kernel32)
            except OSError:
                job = None
            if job and kernel32.AssignProcessToJobObject(job, process):
                _group_done(pid)  # the job of an earlier child with this pid (its leftovers are overdue)
                _JOBS[pid] = job
            elif job:
                kernel32.CloseHandle(job)
        finally:
            if resume and resume(process) != 0:  # an NTSTATUS: it stays suspended, so it goes (a call gets its exit code)
                kernel32.TerminateProcess(process, 1)
            kernel32.CloseHandle(process)

    def _group_done(pid):
        """Close the job of `pid` (kill-on-close: anything still in it ends)."""
        job = _JOBS.pop(pid, None)
        if job:
            _kernel32().CloseHandle(job)

    def _signal_group(pid, hard):
        """Stop the group `pid` leads; whether anything was sent. Soft: CTRL_BREAK_EVENT to its console
        process group, or nothing (False) when this process has no console (started detached, or under
        Wine), where it cannot arrive and CPython 3.8-3.11 raise SystemError: callers then stop it hard at
        once. Hard: its Job object ended, else `taskkill /T /F`, else (taskkill refused) the process alone."""
        if not hard:
            try:
                if not _kernel32().GetConsoleCP():  # 0: no console
                    return False
                os.kill(pid, signal.CTRL_BREAK_EVENT)
                return True
            except (OSError, ImportError, SystemError):  # SystemError: CPython 3.8-3.11 where the event fails
                return False
        job = _JOBS.get(pid)
        try:
            kernel32 = _kernel32()
        except (OSError, ImportError):
            kernel32 = None
        if job and kernel32.TerminateJobObject(job, 1):
            return True
        # taskkill by its full path: CreateProcess would look in the current folder first
        taskkill = os.path.join(os.environ.get("SystemRoot", r"C:\Windows"), "System32", "taskkill.exe")
        try:
            if subprocess.run([taskkill, "/T", "/F", "/PID", str(pid)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
                return True
        except OSError:
            pass
        process = kernel32 and kernel32.OpenProcess(0x0001, False, pid)  # PROCESS_TERMINATE
        if not process:
            return False
        ended = kernel32.TerminateProcess(process, 1)
        kernel32.CloseHandle(process)
        return bool(ended)

    def _group_alive(pid):
        """Whether a process of the job of `pid` still runs (False without one: Windows cannot tell)."""
        job = _JOBS.get(pid)
        if not job:
            return False
        import ctypes
        accounting = (ctypes.c_uint32 * 12)()  # JOBOBJECT_BASIC_ACCOUNTING_INFORMATION: 4 times, 4 counts
        if not _kernel32().QueryInformationJobObject(job, 1, accounting, ctypes.sizeof(accounting), None):
            return False
        return accounting[10] > 0  # ActiveProcesses

    def _process_alive(pid):
        """Whether OpenProcess finds `pid`: os.kill(pid, 0) would end the process here. (A process that
        exited is found while its parent still holds a handle to it.)"""
        import ctypes
        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        return bool(handle and ctypes.windll.kernel32.CloseHandle(handle))  # CloseHandle: nonzero

    # Nothing tells that a process waits reading its stdin here (no /proc, and a pipe does not say that a read is
    # pending), so no question a command asks is seen: a tool's command gets no stdin pipe but its `stdin` template,
    # and a read gets the end of input at once, as from NUL. Prompts are forwarded (and `answers` given) on POSIX only.
    _reading = None

    def _script_argv(path):
        """The words that run the script `path`, or None: by its extension (see script_argv)."""
        return script_argv(path, windows=True, python=sys.executable, pathext=os.environ.get("PATHEXT"))

    def _resolve_program(argv, env):
        return find_program(argv, env)  # CreateProcess would not find npx.cmd

    def _command_text(argv):
        return windows_command_line(argv)  # for cmd.exe, and the C runtime of the program it starts

    def _one_spelling(env):
        """Variables whose names differ only in case are one variable on Windows: the last given wins
        (a config's `Path` over the inherited `PATH`), where the child would get both and read either."""
        names = {}
        for name in env:
            names[name.upper()] = name
        return {name: env[name] for name in names.values()}

    def _variable(env, name):
        """`name`'s value in `env` as a child given `env` reads it: in any case, the last spelling winning."""
        return {key.upper(): value for key, value in env.items()}.get(name.upper())

    _END_OF_INPUT = "Ctrl+Z then Enter"
    _PYTHON = "py"  # the launcher python.org's installer always puts on PATH (`python` only when asked)

    def _cache_base():
        return os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")

    def _open_appending(path, flags, mode):
        """A file to append to (the audit log) that another process may rename while this one has it open:
        os.open does not share delete, so a rotation by one of the processes sharing the file failed with a
        sharing violation (WinError 32), and every line of it after that was lost. CreateFileW with
        FILE_SHARE_DELETE and append-only access (each write lands at the end, as O_APPEND does); os.open when
        ctypes is not there."""
        try:
            import ctypes
            import msvcrt
            kernel32 = _kernel32()
        except (ImportError, OSError, AttributeError):
            return os.open(path, flags, mode)
        # FILE_APPEND_DATA | FILE_READ_ATTRIBUTES (fstat) | SYNCHRONIZE; share read, write and delete; OPEN_ALWAYS
        handle = kernel32.CreateFileW(path, 0x4 | 0x80 | 0x100000, 0x1 | 0x2 | 0x4, None, 4, 0x80, None)
        if handle in (None, ctypes.c_void_p(-1).value):
            raise ctypes.WinError(ctypes.get_last_error())
        try:
            return msvcrt.open_osfhandle(handle, os.O_WRONLY | os.O_APPEND | getattr(os, "O_BINARY", 0))
        except OSError:
            kernel32.CloseHandle(handle)
            raise

    _BINARY_CONTROLS = re.compile(r"[\x00-\x07\x0e-\x1a\x1c-\x1f\x7f]")  # controls no text has (it may have tab to CR, ESC)

    def _local_text(data, cut):
        """A command's output that is not UTF-8 as text in the ANSI code page (cp1252 in Western Europe), what
        Python and most programs write to a pipe here ("h\xe9llo" as é, not a base64 blob), or None: bytes
        the code page does not have, or control characters text has not (cp1256 decodes every byte), are
        binary. When the output was `cut`, a double-byte character split by the cut (cp932) is dropped."""
        import locale
        for end in (len(data), len(data) - 1) if cut else (len(data),):
            try:
                text = data[:end].decode(locale.getpreferredencoding(False))
            except (UnicodeDecodeError, LookupError):
                continue
            return None if _BINARY_CONTROLS.search(text) else text
        return None

    def _text_stdout():
        """Redirected to a file or pipe, print() writes the ANSI code page and fails on the first
        character outside it (an emoji in a tool's description): write UTF-8 instead."""
        if sys.stdout is not None and hasattr(sys.stdout, "reconfigure") and not os.environ.get("PYTHONIOENCODING"):
            sys.stdout.reconfigure(encoding="utf-8", errors="replace")

    def _writable_now(fd, size):
        return False  # select() cannot poll pipes on Windows: every write goes through the thread

    def _on_stop_signals(loop, stop, reload):
        pass  # Ctrl+C arrives as KeyboardInterrupt, handled in main(); no SIGHUP to reload on

    # Windows only (tested under Wine in .ci/windows): a Job object that kills every process in
    # it when its last handle closes, i.e. when this process ends, however it
    # ends. We join it ourselves, so every child and grandchild started from
    # then on is in it from its first instant (no window before registration).
    def _start_watchdog(grace, marker):
        """Put this process in a kill-on-close Job object; return it, or None if Windows refuses."""
        import ctypes
        kernel32 = _kernel32()
        job = _kill_on_close_job(kernel32)
        if not kernel32.AssignProcessToJobObject(job, kernel32.GetCurrentProcess()):
            raise ctypes.WinError(ctypes.get_last_error())
        return _Watchdog(job)

    class _Watchdog:
        """The Job object's handle: kept open until this process ends (closing it would end us too)."""

        def __init__(self, job):
            self.job = job

        def tell(self, sign, pid):
            pass  # children join the job by being born

        def close(self):
            pass


def _whole_characters(head, tail):
    """`head` without a UTF-8 character its end splits, `tail` without one its start splits: the two sides
    of a cut read as text again (a binary stream loses at most three bytes a side, and is broken anyway)."""
    for back in range(1, min(4, len(head)) + 1):
        byte = head[-back]
        if byte < 0x80:
            break
        if byte >= 0xC0:  # the lead byte of the last character: complete, or dropped
            if back < (2 if byte < 0xE0 else 3 if byte < 0xF0 else 4):
                head = head[:-back]
            break
    skip = 0
    while skip < min(3, len(tail)) and 0x80 <= tail[skip] < 0xC0:
        skip += 1
    return head, tail[skip:]


class _Capture:
    """Keeps the first and the last bytes of a stream, `limit` in all, and counts what falls between them.

    The first half of the room holds the head; a ring (a bytearray read from `start`) the last bytes,
    so a long build log keeps the lines that say why it failed. value() is the stream itself when it
    fit, else its head and tail (cut at line ends where the line is short, never inside a character)
    around one line that says exactly what was dropped; `cut` is that number of bytes."""

    __slots__ = ("limit", "head", "ring", "start", "total", "dropped_lines", "line_start")

    def __init__(self, limit):
        self.limit = limit
        self.head = bytearray()
        self.ring = bytearray()
        self.start = 0              # ring[start:] are the last bytes; the front is freed in large steps
        self.total = 0
        self.dropped_lines = 0      # newlines among the bytes that left the ring
        self.line_start = True      # whether the ring's first byte starts a line

    def add(self, data):
        self.total += len(data)
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.ring += data
        keep = self.limit - self.limit // 2
        excess = len(self.ring) - self.start - keep
        if excess > 0:
            end = self.start + excess
            self.dropped_lines += self.ring.count(b"\n", self.start, end)
            self.line_start = self.ring[end - 1] == 0x0A
            self.start = end
            if self.start > keep:  # amortized: the ring is moved once per `keep` bytes dropped
                del self.ring[:self.start]
                self.start = 0

    def _parts(self):
        """(head, bytes dropped, newlines among them, tail, whether both cuts fall at line ends)."""
        head, tail = bytes(self.head), bytes(self.ring[self.start:])
        if self.total == len(head) + len(tail):
            return head, 0, 0, tail, True
        lines, at_ends = self.dropped_lines, True
        end = head.rfind(b"\n") + 1
        if not head.endswith(b"\n") and end and len(head) - end <= len(head) // 4:
            head = head[:end]  # the head's last line, begun, goes with the dropped part
        elif not head.endswith(b"\n"):
            at_ends = False
        begin = tail.find(b"\n") + 1
        if not self.line_start and begin and begin <= len(tail) // 4:
            tail, lines = tail[begin:], lines + 1  # the tail's first line, its start dropped, goes too
        elif not self.line_start:
            at_ends = False
        head, tail = _whole_characters(head, tail)
        return head, self.total - len(head) - len(tail), lines, tail, at_ends

    def value(self):
        head, dropped, lines, tail, at_ends = self._parts()
        if not dropped:
            return head + tail
        return head + ("%s[... %d bytes%s dropped here by the output limit (--max-output %d): the output was %d bytes, "
                       "of which the first %d and the last %d are kept ...]\n" % (
                           "\n" if head and not head.endswith(b"\n") else "", dropped,
                           " (%d lines)" % lines if at_ends else "", self.limit, self.total, len(head),
                           len(tail))).encode("ascii") + tail

    @property
    def cut(self):
        return self._parts()[1]


class _ChildProtocol(asyncio.SubprocessProtocol):
    """Collects a child's output and tells when it exited and when its pipes closed."""

    def __init__(self, limit, on_stderr_line=None, on_output=None):
        loop = asyncio.get_running_loop()
        self.on_output = on_output  # (fd, bytes) as they come: an OutputFeed's add
        self.stdout = _Capture(limit)
        self.stderr = _Capture(limit)
        self.exited = loop.create_future()
        self.pipes_closed = loop.create_future()
        self.open_pipes = {1, 2}
        self.on_stderr_line = on_stderr_line
        self._partial = bytearray()  # a stderr line not ended yet (appended to: linear, however long)

    def pipe_data_received(self, fd, data):
        if self.on_output:
            self.on_output(fd, data)
        if fd == 1:
            self.stdout.add(data)
        else:
            self.stderr.add(data)
            if self.on_stderr_line:
                self._lines(data)

    def _lines(self, data):
        if b"\n" not in data:
            self._partial += data[:max(0, self.stderr.limit - len(self._partial))]
            return
        lines = data.split(b"\n")
        self._partial += lines[0]
        lines[0] = bytes(self._partial[:self.stderr.limit])
        self._partial = bytearray(lines.pop()[:self.stderr.limit])
        for line in lines:
            self.on_stderr_line(_decoded(line.rstrip(b"\r")))

    def pipe_connection_lost(self, fd, exc):
        self.open_pipes.discard(fd)
        if fd == 2 and self._partial and self.on_stderr_line:
            self.on_stderr_line(_decoded(self._partial))
            self._partial = bytearray()
        if not self.open_pipes and not self.pipes_closed.done():
            self.pipes_closed.set_result(None)

    def process_exited(self):
        if not self.exited.done():
            self.exited.set_result(None)


class ProcessResult:
    """What became of one child process.

    `status` is "exited", "timeout", "not-found", "denied" or "error" (could
    not start). `returncode` is negative when a signal ended the process.
    """

    __slots__ = ("argv", "status", "returncode", "stdout", "stderr",
                 "stdout_cut", "stderr_cut", "error", "seconds", "pid")

    def __init__(self, argv, status, returncode=None, stdout=b"", stderr=b"",
                 stdout_cut=0, stderr_cut=0, error="", seconds=0.0, pid=None):
        self.pid = pid  # of the process that ran, whose group it led (None: it never started)
        self.argv = argv
        self.status = status
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.stdout_cut = stdout_cut
        self.stderr_cut = stderr_cut
        self.error = error
        self.seconds = seconds

    @property
    def ok(self):
        """Whether the command exited by itself with code 0."""
        return self.status == "exited" and self.returncode == 0


_CMD_SPECIAL = frozenset('"%^&|<>()!\r\n')  # what cmd.exe acts on in a batch file's command line
_CMD_SPLIT_OPTION = re.compile(r"[,;=\x0b\x0c]-|[,;\x0b\x0c][,;=\x0b\x0c]*/")  # cmd.exe splits %1..%9 at , ; = too


def batch_problem(program, value, batch=None):
    """Why `value` may not reach the batch file `program` (as an argument or a variable), or None.

    Windows runs a .bat or .cmd program through cmd.exe, which reads its command
    line, and expands its %variables%, as shell code that Python's quoting does
    not escape (the BatBadBut problem). So a value bound for one may not hold a
    character cmd.exe acts on, nor end in a backslash (a batch file's "%~1"
    would end in \"), nor start an option after a , ; or = (cmd.exe splits
    %1..%9 there too: `x,-rf` would add -rf; `--root=/data` is fine). `batch`
    (default: on Windows) turns the rule on; elsewhere no cmd.exe is involved."""
    enabled = (not _POSIX) if batch is None else batch
    if not enabled:
        return None
    if os.path.splitext(os.fsdecode(program).rstrip(". "))[1].lower() not in (".bat", ".cmd"):
        return None  # Windows ignores a name's trailing dots and spaces: run.cmd. is run.cmd
    value = os.fsdecode(value)
    special = sorted(set(value) & _CMD_SPECIAL)
    if special:
        what = " ".join(repr(c) for c in special)
    elif value.endswith("\\"):
        what = "a backslash at its end"
    elif _CMD_SPLIT_OPTION.search(value) and " " not in value and "\t" not in value:  # quoted if it has a blank
        what = "a , ; or = before an option's - (or a , or ; before a /)"
    else:
        return None
    return "holds %s, which cmd.exe would act on: Windows runs %s, a batch file, through cmd.exe" % (
        what, os.path.basename(os.fsdecode(program)))


def _os_text_problem(value):
    if not isinstance(value, (str, bytes, os.PathLike)):
        return "is %s, not text" % _type_name(value)
    value = os.fspath(value)
    if ("\0" if isinstance(value, str) else b"\0") in value:
        return "holds a NUL character (\\u0000), which no program can receive; remove it"
    if isinstance(value, str):
        try:
            os.fsencode(value)
        except UnicodeError:
            return "holds a character this system cannot pass to a program (a lone surrogate); remove it"
    return None


def exec_problem(argv, env=None, cwd=None, batch=None):
    """Why `argv`, `env` or `cwd` cannot reach a new process (a NUL byte, a lone surrogate), or None.

    The one check for every value bound for a command line, environment or
    working folder, whatever its source (template, script, config, upstream).
    `batch` (default: on Windows) adds the batch-file rule (batch_problem) for
    the words after a .bat or .cmd program."""
    for index, word in enumerate(argv):
        problem = _os_text_problem(word)
        if not problem and index:
            problem = batch_problem(argv[0], word, batch)
            if problem:  # what to do about it (Platforms: the batch-file rule)
                problem += "; give a value without it, or run the program the batch file starts directly"
        if problem:
            return "%s %s" % ("the command" if index == 0 else "word %d of the command line" % index, problem)
    for key, value in (env or {}).items():
        problem = _os_text_problem(key) or _os_text_problem(value)
        if not problem and (not key or "=" in key):
            problem = "is empty or holds an =" if not key else "holds an ="
        if problem:
            return "the environment variable %s %s" % (json.dumps(key), problem)
    problem = _os_text_problem(cwd) if cwd is not None else None
    return None if problem is None else "the working folder %s" % problem


# Commands of cmd.exe that no file on PATH provides: on Windows a template starting with one never starts.
_CMD_BUILTINS = frozenset(("assoc break call cd chdir cls color copy date del dir echo endlocal erase exit for ftype "
                           "goto if md mkdir mklink move path pause popd prompt pushd rd rem ren rename rmdir set "
                           "setlocal shift start time title type ver verify vol").split())


def program_not_found(program, env=None):
    """"`gti` is not on PATH here (did you mean `git`?)" when `program` (a command's first word) would not
    start, else None: what `check`, and startup in template mode, warn of before any call fails on it."""
    import shutil
    path = _variable(os.environ if env is None else env, "PATH")
    path = os.defpath if path is None else path
    if shutil.which(program, path=path):
        return None
    if os.path.dirname(program):
        return "`%s` is not an executable file here" % program
    if not _POSIX and program.lower() in _CMD_BUILTINS:
        return ("`%s` is not on PATH here: it is built into cmd.exe, not a program, and mcpstudio runs no shell "
                "(use a program: hostname, git, python script.py, a .cmd file)" % program)
    import difflib
    files = {}  # what could be typed in its place, and its file: a program, never a folder, a library or a text file
    for folder in path.split(os.pathsep):
        try:
            entries = os.listdir(folder or ".")
        except OSError:
            continue
        for entry in entries:
            typed, extension = (entry, "") if _POSIX else os.path.splitext(entry.lower())  # GIT.EXE is typed git
            if _POSIX or extension in (".com", ".exe", ".bat", ".cmd"):
                files.setdefault(typed, os.path.join(folder or ".", entry))
    wanted = program if _POSIX else program.lower()

    def runs(name):  # asked of the few close names only: a long PATH has thousands of files
        return not _POSIX or os.access(files[name], os.X_OK) and os.path.isfile(files[name])
    swapped = sorted(name for name in files if sorted(name) == sorted(wanted) and runs(name))  # gti: git, before tic
    close = swapped or [name for name in difflib.get_close_matches(wanted, sorted(files), 5, 0.6) if runs(name)]
    return "`%s` is not on PATH here%s" % (program, " (did you mean `%s`?)" % close[0] if close else "")


def _argv_text(argv):
    """`argv` as a command line the user can paste into this system's shell (cmd.exe on Windows)."""
    return _command_text([str(word) for word in argv])


class ProcessRunner:
    """Starts child processes and stops them: the one owner of every child.

    `run()` reads stdout and stderr concurrently while the child runs (no
    pipe-buffer deadlock), enforces the timeout and output limit, kills the
    process group on cancellation, and ends the call when the child exits
    even if a grandchild still holds the pipes. Every process group that may
    still have members stays in `groups` until it is gone, so `stop_all()`
    at shutdown reaches leftovers too.
    """

    def __init__(self, log, grace=KILL_GRACE):
        self.log = log
        self.grace = grace
        self.live = {}      # pid -> transport, while the child itself runs
        self.groups = set()  # process groups (leader pids) that may still have members
        self.watchdog = None  # started just before the first child (see _child_env)
        self.marker = None   # this run's WATCHDOG_ENV value, in every child's environment
        self.room = None     # an asyncio.Event, clear while the client is not reading (see pause_with)
        self.hidden = ()     # variables no child gets (--http's bearer token), even from a configured env

    def _child_env(self, env):
        """The environment for a new child: `env` (None: ours) plus the watchdog's marker.

        The watchdog starts here, lazily, so a server that never runs a command
        never pays for it, and it runs before any child exists."""
        if self.marker is None:
            self.marker = "%d-%s" % (os.getpid(), os.urandom(8).hex())
            try:
                self.watchdog = _start_watchdog(self.grace, self.marker)
            except (OSError, ImportError) as exc:  # refused, or a Python without ctypes: run on without it
                self.log.warning("cannot start the watchdog (children may outlive a killed mcpstudio): %s", exc)
        env = _one_spelling(dict(os.environ if env is None else env))
        env[WATCHDOG_ENV] = self.marker
        for name in self.hidden:
            env.pop(name, None)
        return env

    def _tell_watchdog(self, sign, pid):
        if self.watchdog:
            try:
                self.watchdog.tell(sign, pid)
            except (OSError, ValueError):
                self.log.warning("the watchdog is gone; children may outlive a killed mcpstudio")
                self.watchdog = None

    def _track(self, pid):
        _group_started(pid)
        self.groups.add(pid)
        self._tell_watchdog(b"+", pid)

    def _forget(self, pid):
        if pid in self.groups:
            self.groups.discard(pid)
            self._tell_watchdog(b"-", pid)
            _group_done(pid)

    def close_watchdog(self):
        """At exit, after stop_all(): the watchdog stops what is left (if anything) and exits."""
        if self.watchdog:
            try:
                self.watchdog.close()
            except OSError:
                pass
            self.watchdog = None

    def hide(self, *names):
        """No child gets the variables `names` from now on (--http's bearer token), even from a configured env."""
        self.hidden = names

    def pause_with(self, room):
        """Start no command while the asyncio.Event `room` is clear: the client is not reading what was written
        (see StdioTransport)."""
        self.room = room

    async def run(self, argv, *, stdin_bytes=None, env=None, cwd=None, timeout=None,
                  output_limit=DEFAULT_MAX_OUTPUT, on_stderr_line=None, on_output=None, asker=None,
                  shown=None) -> ProcessResult:
        """Run `argv` to completion under the runner's limits; return a ProcessResult. An `asker` (PromptWatch)
        is handed the stdin pipe, after `stdin_bytes`; `shown` is the argv as the log shows it (secrets masked)."""
        loop = asyncio.get_running_loop()
        argv = _resolve_program(argv, env)
        problem = exec_problem(argv, env, cwd)
        if problem:
            return ProcessResult(argv, "error", error=problem)
        if self.room:
            await self.room.wait()  # the client is not reading what we wrote: start nothing new
        started, piped = time.monotonic(), stdin_bytes is not None or asker
        try:
            transport, child, cancelled = await self._spawn(
                lambda: _ChildProtocol(output_limit, on_stderr_line, on_output), argv,
                subprocess.PIPE if piped else subprocess.DEVNULL, env, cwd)
        except FileNotFoundError as exc:
            if cwd is not None and not os.path.isdir(cwd):
                return ProcessResult(argv, "error", error="the folder %s does not exist" % cwd)
            import shutil
            found = shutil.which(argv[0]) if os.path.basename(argv[0]) == argv[0] else argv[0]
            if _POSIX and found and os.path.isfile(found):
                return ProcessResult(argv, "error", error="the interpreter on its #! line was not found")
            return ProcessResult(argv, "not-found", error=str(exc))
        except PermissionError as exc:
            return ProcessResult(argv, "denied", error=str(exc))
        except (OSError, ValueError) as exc:
            return ProcessResult(argv, "error", error=str(exc))
        pid = transport.get_pid()
        self.live[pid] = transport
        self._track(pid)
        self.log.debug("started pid %d: %s", pid, _argv_text(shown or argv))
        status = "exited"
        try:
            if cancelled:  # while its pipes were being connected: stopped like any cancelled call
                raise asyncio.CancelledError()
            if piped:
                pipe = transport.get_pipe_transport(0)
                pipe.write(stdin_bytes or b"")
                if asker:
                    asker.begin(pid, pipe)
                else:
                    pipe.write_eof()
            if not child.exited.done():
                await asyncio.wait([child.exited], timeout=timeout)  # leaves the future alone on timeout
            if not child.exited.done():
                status = "timeout"
                await self._stop_fully(pid, child)
            # The child is gone; what it left behind in its group goes too.
            if not child.pipes_closed.done():
                await asyncio.wait([child.pipes_closed], timeout=PIPE_LINGER)
            if _group_alive(pid) or not child.pipes_closed.done():
                _signal_group(pid, hard=False)
                await asyncio.wait([child.pipes_closed], timeout=PIPE_LINGER)
        except asyncio.CancelledError:
            await self._stop_fully(pid, child)
            raise
        finally:
            self.live.pop(pid, None)
            transport.close()
            if _group_alive(pid):
                loop.call_later(self.grace, self._kill_leftovers, pid)
            else:
                self._forget(pid)
        return ProcessResult(
            argv, status, transport.get_returncode(),
            child.stdout.value(), child.stderr.value(), child.stdout.cut, child.stderr.cut,
            seconds=time.monotonic() - started, pid=pid)

    async def start_server(self, argv, protocol_factory, *, env=None, cwd=None):
        """Start a long-running child (an MCP server) with all three pipes; end it with end_server().

        Raises ValueError (a clear sentence) for a value no process can receive, OSError if it cannot start."""
        argv = _resolve_program(argv, env)
        problem = exec_problem(argv, env, cwd)
        if problem:
            raise ValueError(problem)
        transport, protocol, cancelled = await self._spawn(protocol_factory, argv, subprocess.PIPE, env, cwd)
        pid = transport.get_pid()
        self._track(pid)
        if cancelled:  # while its pipes were being connected: its group goes, not only the process
            _signal_group(pid, hard=False)
            transport.close()
            asyncio.get_running_loop().call_later(self.grace, self._kill_leftovers, pid)
            raise asyncio.CancelledError()
        return transport, protocol

    async def _spawn(self, protocol_factory, argv, stdin, env, cwd):
        """loop.subprocess_exec (`stdin` as given, stdout and stderr piped, `env` through _child_env),
        run to its end even if the caller is cancelled meanwhile; return (transport, protocol, cancelled).

        The process exists before its pipes are connected. Cancelled in between,
        asyncio would kill that process alone and forget it, leaving whatever it
        had started in its group running; so the caller gets the process and
        stops its group. If it did not start, a cancel is raised as such. The
        caller's _track gives it its group (on Windows it waits suspended until
        then: _group_spawn_options)."""
        spawning = asyncio.ensure_future(asyncio.get_running_loop().subprocess_exec(
            protocol_factory, *argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=self._child_env(env), cwd=cwd, **_group_spawn_options()))
        cancelled = False
        while not spawning.done():
            try:
                await asyncio.shield(spawning)
            except asyncio.CancelledError:
                cancelled = True
            except Exception:
                break  # it failed to start: spawning.result() raises why
        if cancelled and (spawning.cancelled() or spawning.exception()):
            raise asyncio.CancelledError()
        transport, protocol = spawning.result()
        return transport, protocol, cancelled

    async def end_server(self, transport, exited, wait):
        """Close the child's stdin and give it `wait` seconds to exit; then stop its group.

        Runs to the end even if the caller is cancelled meanwhile."""
        ending = asyncio.ensure_future(self._end_server(transport, exited, wait))
        while not ending.done():
            try:
                await asyncio.shield(ending)
            except asyncio.CancelledError:
                if ending.done():
                    raise

    async def _end_server(self, transport, exited, wait):
        pid = transport.get_pid()
        stdin = transport.get_pipe_transport(0)
        if stdin:
            stdin.close()
        if not exited.done():
            await asyncio.wait([exited], timeout=wait)
        if not exited.done() or _group_alive(pid):
            await self._stop(pid, exited)
        transport.close()
        self._forget(pid)

    def _kill_leftovers(self, pid):
        if pid in self.groups and pid not in self.live:  # a new child may have been given the same pid
            _signal_group(pid, hard=True)
            self._forget(pid)

    async def _stop_fully(self, pid, child):
        """Run the stop sequence to its end, even if the caller is cancelled again meanwhile."""
        stopping = asyncio.ensure_future(self._stop(pid, child.exited))
        while not stopping.done():
            try:
                await asyncio.shield(stopping)
            except asyncio.CancelledError:
                continue  # a second cancel must not leave the group half stopped

    async def _stop(self, pid, exited):
        """SIGTERM the group, wait up to the grace period for it to end, then SIGKILL it (at once when
        nothing was sent: the group is gone, or Windows has no console to send CTRL_BREAK_EVENT through)."""
        if _signal_group(pid, hard=False):
            deadline = time.monotonic() + self.grace
            if not exited.done():
                await asyncio.wait([exited], timeout=self.grace)
            while _group_alive(pid) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
        _signal_group(pid, hard=True)
        await asyncio.wait([exited], timeout=1.0)

    async def stop_all(self):
        """Stop every child and leftover process group (shutdown): SIGTERM, grace, SIGKILL."""
        groups = list(self.groups)
        signalled = [pid for pid in groups if _signal_group(pid, hard=False)]
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline and any(_group_alive(p) for p in signalled):
            await asyncio.sleep(0.02)
        for pid in groups:
            _signal_group(pid, hard=True)
            self._forget(pid)


# What could make a model's value look like other text in a form a person reads: C0 and C1 controls
# (newlines, escape sequences), bidi overrides and isolates, zero-width and other invisible characters.
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180e"
                        "\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb]")
_ESCAPE_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)|[@-_])")
_ESCAPED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def visible_text(text):
    """`text` of the model's as a confirmation shows it: each invisible or control character as a visible escape
    (\\n, \\x1b, \\u202e), a run of more than two spaces as `[N spaces]`: one line, no padding, nothing hidden."""
    text = _INVISIBLE.sub(lambda match: _ESCAPED.get(match.group(), ("\\x%02x" if ord(match.group()) < 256 else "\\u%04x")
                                                     % ord(match.group())), text)
    return re.sub(r" {3,}", lambda match: " [%d spaces] " % len(match.group()), text)


def plain_text(text, newlines=True):
    """A command's output as form text or a progress message: escape sequences removed, then every control
    and invisible character but tabs and newlines (a space without `newlines`)."""
    text = _ESCAPE_SEQUENCE.sub("", text)
    return _INVISIBLE.sub(lambda match: {"\t": "\t", "\n": "\n" if newlines else " "}.get(match.group(), ""), text)


# --------------------------------------------------------------------------
# Logging: stderr and an optional log file, never stdout
# --------------------------------------------------------------------------

_SECRET_NAME = re.compile(r"token|secret|passw|passphrase|key|auth|credential|private|cookie|session|signature|"
                          r"(^|_)pat($|_)|pwd", re.I)


def looks_secret(name):
    """Whether a variable of this name holds a secret (API_KEY, GITHUB_TOKEN, DB_PASSWORD), not a path."""
    return bool(_SECRET_NAME.search(name)) and name.upper() not in ("PWD", "OLDPWD")


_URL_TEXT = re.compile(r"(?<![\w+.-])[A-Za-z][\w+.-]*://[^\s'\"]+")  # begins a run only: linear on `a.a.a...`
_OPTION_TEXT = re.compile(r"(?<![^\s'\"])(--?[A-Za-z][\w.-]*(?:=|\s+)|[A-Za-z_][\w.-]*=)('[^']*'|\"[^\"]*\"|[^\s'\"]+)")


_HEADER_TEXT = re.compile(r"(?<![\w-])([A-Za-z][\w-]*:[ \t]*)((?:Bearer|Basic|Token)[ \t]+)?([^\s'\"]+)", re.I)


_ANCHOR = re.compile(r"\w[\w.%-]{0,99}")  # a heading's anchor: words (any script, %-encoded too) joined by - _ or .
_KEY_RUN = re.compile(r"(?=[A-Za-z0-9]*(?:\d|[a-z][A-Z]))[A-Za-z0-9]{16,}")  # a run no heading's anchor has (16
# letters and digits, a digit or a capital after a small letter among them): a key, a token, a JWT's part


def _masked_url(match):
    from urllib.parse import urlsplit, urlunsplit
    try:
        parts = urlsplit(match.group(0))
    except ValueError:
        return "***"
    user, at, host = parts.netloc.rpartition("@")
    netloc = (user.partition(":")[0] + ":***" if ":" in user else "***") + at + host if at else host
    query, fragment = (re.sub(r"([^&;=]+)(=[^&;]*)?", r"\1=***", text) for text in (parts.query, parts.fragment))
    if "=" not in parts.fragment:  # an anchor (a manual's #section-name) stays; a key (#k3Y..., #/id/KEY) never
        fragment = parts.fragment if _ANCHOR.fullmatch(parts.fragment) and not _KEY_RUN.search(parts.fragment) \
            else "***" if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


_REFERENCE_ONLY = re.compile(r"['\"]?\$(?:\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)['\"]?")  # ${NAME}, no default


def _masked_option(match):
    name, value = match.groups()
    return name + "***" if looks_secret(name.strip(" =-")) and not value.startswith("-") and not \
        _REFERENCE_ONLY.fullmatch(value) else match.group(0)


def _masked_header(match):
    name, scheme, value = match.groups()
    # A variable's name (`GITHUB_TOKEN: ${MY_TOKEN} is not set`) is no secret: shown, as the log shows it.
    return name + (scheme or "") + "***" if looks_secret(name.rstrip(": \t")) and not \
        _REFERENCE_ONLY.fullmatch(value) else match.group(0)


def mask_secrets(value, secrets=()):
    """`value` (a command line, a URL, a log line; a list or object of them, item by item) as people may see it, in
    status, the TUI, the manager tools and the audit log: each of `secrets` (the values the config or a call marks
    secret), URL passwords, query values and the value of secret-looking options (`--api-key V`, `--token=V`,
    `API_KEY=V`) and headers (`Authorization: Bearer V`, `X-Api-Key: V`) replaced by ***."""
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, "***")
        return _HEADER_TEXT.sub(_masked_header, _OPTION_TEXT.sub(_masked_option, _URL_TEXT.sub(_masked_url, value)))
    if isinstance(value, dict):
        return {mask_secrets(key, secrets): mask_secrets(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_secrets(item, secrets) for item in value]
    return "***" if isinstance(value, NUMBER) and any(s in str(value) for s in secrets) else value  # a PIN


def masked_arguments(arguments, schema):
    """(`arguments` as the audit log and --log show them, the secret values in them as the command gets them): the value
    of a secret-looking name or of a `writeOnly` property is ***, at any depth (`options.password`,
    `headers.Authorization`), names matched to the schema's spelling first (`api-key` reaches `api_key`), and a
    secret's every scalar is a secret, whatever its type or length (a PIN, a number for a string)."""
    found = []

    def collect(value):
        if isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)
        elif isinstance(value, (str,) + NUMBER) and not isinstance(value, bool) and _text(value):
            found.append(_text(value))

    def masked(value, schema):
        schema = _object(schema)
        if isinstance(value, dict):
            properties = _object(schema.get("properties"))
            out = {}
            for name, item in match_spellings(value, properties).items():
                prop = _object(properties.get(name))
                if looks_secret(name) or prop.get("writeOnly"):
                    collect(item)
                    out[name] = "***"
                else:
                    out[name] = masked(item, prop)
            return out
        if isinstance(value, list):
            return [masked(item, schema.get("items")) for item in value]
        return _clip(value, 1000) if isinstance(value, str) else value
    return masked(arguments, schema), found


def _masked_argv(argv, secrets):
    """`argv` with each of `secrets` replaced by ***: wherever it stands, and one of three characters or fewer
    (a PIN, a short code) as a whole word or after `=` (within other words it would shred the command line)."""
    out = []
    for word in map(_text, argv):
        for secret in sorted(secrets, key=len, reverse=True):
            if len(secret) > 3:
                word = word.replace(secret, "***")
            elif word == secret or word.endswith("=" + secret):
                word = word[:len(word) - len(secret)] + "***"
        out.append(word)
    return out


class Log:
    """Debug and diagnostic lines for people: to stderr, and to `--log FILE`.

    `secrets` are masked in every line written (e.g. `--env` values).
    """

    def __init__(self, debug=False, path=None, secrets=(), level="info"):
        self.debug_enabled = debug or level == "debug"
        self.quiet = {"warning": ("info",), "error": ("info", "warning")}.get(level, ())  # kept off stderr
        self.file = open(path, "a", encoding="utf-8", errors="replace", buffering=1) if path else None
        # Mask each secret as written and as it appears JSON-escaped; values
        # shorter than 4 characters are not secrets worth mangling a log for.
        self.secrets = []
        self.add_secrets(secrets)
        self.enabled = self.debug_enabled or self.file is not None
        self.warned = set()
        self.catalogs = []  # the Servers' Catalogs (a namespace's URL adds its own): their schemas mask wire lines
        self.forms = collections.OrderedDict()  # id -> requestedSchema of the last forms asked (their answers masked)
        self.warnings = 0  # how many were logged (`check` counts them in its verdict)

    def mask_by(self, catalog):
        """Mask tools/call arguments by the tool schemas of `catalog` too."""
        self.catalogs.append(catalog)

    def schema_of(self, name):
        """The inputSchema of the tool `name`: as listed by a catalog (the newest first), else its fixed tool's."""
        return next((schema for schema in [_object(c.listed.get(name)).get("inputSchema") for c in self.catalogs[::-1]]
                     + [c.schema_of(name) for c in self.catalogs] if schema), None)

    def add_secrets(self, secrets):
        """Mask these values (as written and JSON-escaped) in every line from now on."""
        forms = set(self.secrets)
        for secret in secrets:
            if len(secret) >= 4:
                forms.update((secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]))
        self.secrets = sorted(forms, key=len, reverse=True)

    def warn_once(self, message, *args):
        """A warning said once a run, for what each listing would repeat (a collision, a cap)."""
        text = message % args
        if text not in self.warned:
            self.warned.add(text)
            self.warning(text)

    def mask(self, text):
        """`text` with every secret replaced by ***."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def _write(self, level, message, to_stderr):
        message = self.mask(message)
        # A log that cannot be written (stderr closed, disk full) must never
        # stop the server: the line is dropped.
        if to_stderr:
            try:
                sys.stderr.write("mcpstudio: %s%s\n" % ("" if level == "info" else level + ": ", message))
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
        if self.file:
            try:
                self.file.write("%s %s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), level.upper(), message))
            except (OSError, ValueError):
                pass

    def debug(self, fmt, *args):
        """Log a debug line (written only with --debug or --log)."""
        if self.enabled:
            self._write("debug", fmt % args if args else fmt, self.debug_enabled)

    def info(self, fmt, *args):
        """Log an info line."""
        self._write("info", fmt % args if args else fmt, "info" not in self.quiet)

    def warning(self, fmt, *args):
        """Log a warning."""
        self.warnings += 1
        self._write("warning", fmt % args if args else fmt, "warning" not in self.quiet)

    def error(self, fmt, *args):
        """Log an error."""
        self._write("error", fmt % args if args else fmt, True)

    def wire(self, direction, data):
        """Record one protocol message in the log file, the secrets of a call's arguments and of a form's answer
        masked (see masked_arguments)."""
        if self.file:
            text = _decoded(data).rstrip("\n")
            try:
                message = json.loads(text)
            except ValueError:
                message = None
            masked = [self._masked(item) for item in (message if isinstance(message, list) else [message])
                      if isinstance(item, dict)]
            if any(changed for _, changed in masked):
                text = json.dumps([item for item, _ in masked] if isinstance(message, list) else masked[0][0],
                                  ensure_ascii=False)
            self._write("wire", "%s %s" % (direction, text), False)

    def _masked(self, message):
        """(`message` with its secrets masked, whether it had any): a tools/call's arguments by its tool's schema, an
        answer to a form by the form's schema (remembered when the form went out)."""
        params, result = _object(message.get("params")), _object(message.get("result"))
        if message.get("method") == "elicitation/create" and "id" in message:
            self.forms[json.dumps(message["id"])] = _object(params.get("requestedSchema"))
            while len(self.forms) > 100:
                self.forms.popitem(last=False)
        if message.get("method") == "tools/call" and isinstance(params.get("arguments"), dict):
            schema = self.schema_of(params.get("name"))
            shown, secrets = masked_arguments(params["arguments"], schema)
            answers = {}  # a 2026-07-28 retry's answers to forms that asked for the tool's parameters
            for key, answer in _object(params.get("inputResponses")).items():
                content = _object(answer).get("content")
                masked, found = masked_arguments(content, schema) if isinstance(content, dict) else (content, [])
                answers[key] = dict(answer, content=masked) if found else answer
                secrets += found
            if not secrets:
                return message, False
            shown = dict(params, arguments=shown, **({"inputResponses": answers} if answers else {}))
            return dict(message, params=shown), True
        form = self.forms.pop(json.dumps(message.get("id")), None) if "method" not in message else None
        if form is not None and isinstance(result.get("content"), dict):
            shown, secrets = masked_arguments(result["content"], form)
            return (dict(message, result=dict(result, content=shown)), True) if secrets else (message, False)
        return message, False

    def close(self):
        """Close the --log file."""
        if self.file:
            try:
                self.file.close()
            except OSError:
                pass
            self.file = None


class TerminalProgress:
    """`doing 3/40 (name)` on one stderr line for a long operation, only when stderr is a terminal.

    Nothing shows for the first half second, so quick operations stay silent;
    `finish()` clears the line.
    """

    DELAY = 0.5

    def __init__(self, label, total):
        self.label, self.total, self.done, self.width = label, total, 0, 0
        self.started = time.monotonic()
        try:
            self.enabled = total > 1 and sys.stderr.isatty()
        except (AttributeError, ValueError):
            self.enabled = False

    def _show(self, text):
        try:
            sys.stderr.write("\r%s%s\r" % (text, " " * max(0, self.width - len(text))))
            sys.stderr.flush()
        except (OSError, ValueError):
            self.enabled = False
        self.width = len(text)

    def step(self, item=""):
        self.done += 1
        if self.enabled and time.monotonic() - self.started >= self.DELAY:
            self._show("mcpstudio: %s %d/%d%s" % (self.label, self.done, self.total, " (%s)" % item if item else ""))

    def finish(self):
        if self.enabled and self.width:
            self._show("")


def _say(text):
    """A line for the person at the terminal, on stderr (stdout may be the protocol, or what they asked for)."""
    sys.stderr.write("mcpstudio: %s\n" % text)


def _claim_stdout():
    """Keep the protocol stream on a private descriptor and point fd 1 at stderr.

    A stray print() or a child that inherits fd 1 then writes to stderr and
    can never corrupt the protocol.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


# --------------------------------------------------------------------------
# JSON-RPC session and the stdio transport
# --------------------------------------------------------------------------

NEWLINE = "newline"
CONTENT_LENGTH = "content-length"


def encode_message(message, framing=NEWLINE):
    """One JSON-RPC message as bytes on the wire, in the given framing."""
    try:
        body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only the escaped form is valid UTF-8
        body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    if framing == CONTENT_LENGTH:
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    return body + b"\n"


_STDIO_HEADER = re.compile(rb"[A-Za-z0-9-]+:")  # a header such as Content-Type: inside a Content-Length block


class StdioFraming:
    """Cuts the bytes of a stdio stream into messages; no I/O, so it is tested with tables.

    Newline-delimited JSON (a CR before the newline and blank lines are
    ignored), or `Content-Length: N` headers, a blank line and N bytes (the LSP
    framing some clients use), mixed freely. `feed(bytes)` and, at the end
    of the stream, `end()` return a list of `(item, framing)`: `item` is one
    message's bytes, or an McpError (PARSE_ERROR) to answer with id null. A
    message over `limit` bytes is reported and skipped without being kept,
    and the stream stays in step; `skipped(head, tail)`, when given, gets the
    first and last 1000 bytes of each line so skipped. Buffering is linear:
    bytes are appended to one buffer and taken from its front, and a line is
    scanned only once.
    """

    def __init__(self, limit=None, skipped=None):
        self.limit = MAX_MESSAGE if limit is None else limit
        self.skipped = skipped
        self._ends = (b"", b"")  # the head and tail so far of the line being skipped
        self._buf = bytearray()
        self._scan = 0           # the newline search resumes here
        self._header = None      # in a header block: the Content-Length (int), or the error it gave
        self._body = None        # bytes of the Content-Length body being read
        self._skip = 0           # bytes of an oversized body still to throw away
        self._skip_line = False  # throwing away an oversized line up to its newline

    def _too_large(self) -> McpError:
        return McpError(PARSE_ERROR, "Parse error: a message larger than %d bytes was skipped" % self.limit)

    def feed(self, data):
        """Take more bytes; return the (item, framing) pairs they complete."""
        out = []
        buf = self._buf
        buf += data
        while True:
            if self._skip:
                taken = min(self._skip, len(buf))
                del buf[:taken]
                self._skip -= taken
                if self._skip:
                    return out
            elif self._body is not None:
                if len(buf) < self._body:
                    return out
                out.append((self._take(self._body, 0), CONTENT_LENGTH))
                self._body = None
            else:
                nl = buf.find(b"\n", self._scan)
                if nl < 0:
                    if self._skip_line or len(buf) > self.limit:
                        if not self._skip_line:
                            out.append((self._too_large(), NEWLINE))
                        self._skipping(buf)
                        buf.clear()
                        self._skip_line = True
                    self._scan = len(buf)
                    return out
                self._scan = 0
                if self._skip_line or nl > self.limit:
                    self._skipping(buf[:nl])
                    del buf[:nl + 1]
                    if not self._skip_line:
                        out.append((self._too_large(), NEWLINE))
                    self._skip_line = False
                    if self.skipped:
                        self.skipped(*self._ends)
                    self._ends = (b"", b"")
                else:
                    self._line(self._take(nl, 1), out)

    def _skipping(self, data):
        """Keep the first and last 1000 bytes of the line being skipped (for `skipped`)."""
        if self.skipped:
            head, tail = self._ends
            self._ends = (head or bytes(data[:1000]), bytes((tail + data[-1000:])[-1000:]))

    def _take(self, size, extra):
        """The first `size` bytes of the buffer, removed with `extra` more (one copy, no rebuild)."""
        with memoryview(self._buf) as view:
            data = bytes(view[:size])
        del self._buf[:size + extra]
        return data

    def _line(self, line, out):
        if line.endswith(b"\r"):
            line = line[:-1]
        length_line = line[:15].lower() == b"content-length:"
        if self._header is not None:  # in a header block; a Content-Length line: a new message's, the block never ended
            if _STDIO_HEADER.match(line) and not length_line:
                return  # another header (Content-Type): not needed
            length, self._header = self._header, None
            if line.strip():  # not a header: the block never ended, and this line stands on its own
                out.append((length if isinstance(length, McpError) else McpError(
                    PARSE_ERROR, "Parse error: a Content-Length header not followed by a blank line"), CONTENT_LENGTH))
                self._line(line, out)
                return
            if isinstance(length, McpError):
                out.append((length, CONTENT_LENGTH))  # its body cannot be found: read on line by line
            elif length > self.limit:
                self._skip = length
                out.append((self._too_large(), CONTENT_LENGTH))
            else:
                self._body = length
        elif length_line:
            value = line[15:].strip()
            if value.isdigit() and len(value) <= 18:
                self._header = int(value)
            else:
                self._header = McpError(PARSE_ERROR, "Parse error: bad header %s: Content-Length must be a "
                                        "number of bytes" % _decoded(line[:80]))
        elif line.strip():
            out.append((line, NEWLINE))

    def end(self):
        """What the stream's end leaves: its last line if it had no newline, or an error for a cut message."""
        out = []
        if self._buf and not self._skip_line and self._body is None and not self._skip:
            self._line(bytes(self._buf), out)
        if self._header is not None or self._body is not None:
            out.append((McpError(PARSE_ERROR, "Parse error: the input ended inside a Content-Length message"),
                        CONTENT_LENGTH))
        return out


class StdioTransport:
    """Messages on two file descriptors, read and written by threads.

    Reading happens in a thread that hands each message (see StdioFraming)
    to the loop (works for pipes, files and terminals on every platform);
    writing happens in a thread too, so a client that stops reading never
    stalls the loop, except that a small message the pipe has room for is
    written at once. Each message records its framing so the answer can use
    the same.

    Backpressure: once more than `limit` bytes wait for the client to read
    them, reading stops (the client's writes block) and `room` is cleared (the
    runner starts no command) until the client has read half of them. A
    client that closed its end of stdout is noticed (`on_gone`) and nothing
    more is queued for it.
    """

    def __init__(self, in_fd, out_fd, log: Log, limit=MAX_UNSENT):
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.log = log
        self.limit = limit
        self.framing = NEWLINE  # the client's last message's: what messages of our own use (see heard)
        import queue
        self._outbox = queue.SimpleQueue()
        self._writer = None
        self._unsent = 0           # bytes handed to the writer thread and not yet written
        self._full = False
        self._dropped = 0          # log and progress notifications dropped while the client was behind
        self._lock = threading.Lock()
        self._reading = threading.Event()  # clear while the client is behind: the reader waits
        self._reading.set()
        self.room = None           # asyncio.Event, the same for the loop (made in start)
        self.gone = False          # the client closed its end of stdout
        self._loop = None
        self._on_gone = None

    def start(self, loop, on_message, on_eof, on_gone=None):
        """Begin reading; `on_message(item, framing)`, `on_eof()` and `on_gone()` run on `loop`."""
        self._loop, self._on_gone = loop, on_gone
        self.room = asyncio.Event()
        self.room.set()

        threading.Thread(target=self._read_loop, args=(loop, on_message, on_eof), name="mcpstudio-stdin",
                         daemon=True).start()
        self._writer = threading.Thread(target=self._write_loop, name="mcpstudio-stdout", daemon=True)
        self._writer.start()

    def _read_loop(self, loop, on_message, on_eof):
        framing = StdioFraming()
        try:
            while True:
                self._reading.wait()
                chunk = os.read(self.in_fd, 1 << 16)
                if not chunk:
                    break
                for item in framing.feed(chunk):
                    loop.call_soon_threadsafe(on_message, *item)
        except OSError:
            pass
        for item in framing.end():
            loop.call_soon_threadsafe(on_message, *item)
        loop.call_soon_threadsafe(on_eof)

    def send(self, message, framing=None, related=None):
        if self._full and isinstance(message, dict) and message.get("method") in DROPPABLE:
            with self._lock:  # the client is behind: a log line or progress is dropped, never a reply
                if self._full:
                    self._dropped += 1
                    return
        data = encode_message(message, framing or self.framing)
        if self.log.file:
            self.log.wire("<-", data)
        with self._lock:
            if self.gone:
                return
            # The fast path: nothing queued, a small message, and room in the pipe. A write
            # of at most PIPE_BUF bytes to a pipe with room is whole and never blocks, so
            # the loop writes it itself and saves the hand-off to the writer thread.
            if self._unsent == 0 and _writable_now(self.out_fd, len(data)):
                try:
                    os.write(self.out_fd, data)
                    return
                except OSError:
                    pass  # let the writer thread find out
            self._unsent += len(data)
            if self._unsent > self.limit and not self._full:
                self._full = True
                self._reading.clear()
                if self.room:
                    self.room.clear()
                self.log.debug("the client is not reading: %d bytes wait; reading paused", self._unsent)
        self._outbox.put(data)

    def ended(self, request_id):
        """A request was cancelled: over stdio it simply gets no response (HTTP ends its stream)."""

    def heard(self, framing):
        """The client's last message came in `framing` (newline or Content-Length): ours follow it."""
        self.framing = framing

    def _write_loop(self):
        while True:
            data = self._outbox.get()
            if data is None:
                return
            gone = False
            try:
                view = memoryview(data)
                while view:
                    written = os.write(self.out_fd, view)
                    view = view[written:]
            except OSError:
                gone = True  # the client closed its end: nothing more can be said
            with self._lock:
                self._unsent -= len(data)
                self.gone = self.gone or gone
                if self._full and (gone or self._unsent <= self.limit // 2):
                    self._full = False
                    self._reading.set()
                    if self._loop:
                        self._loop.call_soon_threadsafe(self._room_again)
            if gone:
                if self._loop and self._on_gone:
                    self._loop.call_soon_threadsafe(self._on_gone)
                return

    def _room_again(self):
        if not self._full:  # it may have filled up again meanwhile
            self.room.set()
        with self._lock:
            dropped, self._dropped = self._dropped, 0
        if dropped:
            self.log.warning("the client was not reading: %d log and progress notifications were dropped", dropped)

    def close(self, timeout=2.0):
        """Flush what is queued (up to `timeout` seconds) and stop the writer."""
        self._outbox.put(None)
        if self._writer:
            self._writer.join(timeout)


def _with_meta(message, key, value):
    """A copy of `message` (params or a result) with `key` added to its `_meta`."""
    return dict(message, _meta=dict(message.get("_meta") or {}, **{key: value}))


RELATED_TASK = "io.modelcontextprotocol/related-task"


class CallContext:
    """What one request may do back toward the client while it runs.

    Once the client cancels the request, `cancelled` is set and nothing more
    is sent for it (no progress, no log lines).
    """

    __slots__ = ("session", "request_id", "progress_token", "cancelled", "_progress", "modern", "level",
                 "capabilities", "task", "inputs", "answered", "asked", "ran", "served", "read", "running", "prompts")

    def __init__(self, session, request_id, progress_token=None):
        self.session = session
        self.request_id = request_id
        self.progress_token = progress_token
        self.cancelled = False
        self._progress = None
        self.modern = False  # a 2026-07-28 request: its own log level, from its `_meta`
        self.level = None
        self.capabilities = {}  # a 2026-07-28 request's own client capabilities (from its `_meta`)
        self.task = None        # the id of the task this call runs as
        self.inputs = {}        # a 2026-07-28 retry's `inputResponses` and `requestState` (SEP-2322)
        self.answered = set()   # the keys of `inputResponses` mcpstudio itself asked (confirm...): never forwarded
        self.asked = False      # a person answered the command's question: the result is theirs, never cached
        self.ran = None         # the ProcessResult of the command the call ran (for the audit log)
        self.served = None      # (owner, version, tool) of the server run that answered it (the result cache's key)
        self.read = None        # the Server's resources_read(params, ctx) (a file argument's resource URI)
        self.running = None     # the Task itself (its status message shows the command's last line)
        self.prompts = None     # 2026-07-28: the InputBridge that asks a command's questions as input_required rounds

    @property
    def owner(self):
        """Whom a task or a kept output this call makes belongs to: its handshake-era session; in 2026-07-28 (no
        sessions) the signed-in person's subject, or None (every request behind the same endpoint)."""
        return getattr(self.session, "person", None) if self.modern else self.session

    def declared(self, capability):
        """Whether the client declared `capability` (a capability's or an extension's name) for this request:
        in its `_meta` (2026-07-28), or in `initialize` (the handshake era)."""
        declared = self.capabilities if self.modern else self.session.client_capabilities
        return capability in declared or capability in _object(declared.get("extensions"))

    def notify(self, method, params):
        """A notification that belongs to this request (on HTTP: its own response stream, while it lasts)."""
        if self.task:
            params = _with_meta(params, RELATED_TASK, {"taskId": self.task})
        self.session.notify(method, params, self.request_id)

    def progress(self, progress, total=None, message=None):
        """Send `notifications/progress` if the client asked for it; values only increase."""
        if (self.progress_token is None or self.cancelled
                or (self._progress is not None and progress <= self._progress)):
            return
        self._progress = progress
        params = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message:
            params["message"] = plain_text(message)
        self.notify("notifications/progress", params)

    def log(self, level, text, logger="mcpstudio", meta=None):
        """Send a log line to the client if it asked for this level (`meta`: its `_meta`)."""
        if self.wants(level):
            params = {"level": level, "logger": logger, "data": text}
            self.notify("notifications/message", dict(params, _meta=meta) if meta else params)

    def wants(self, level):
        """Whether a log line at `level` would reach the client (skip building it if not).

        Handshake era: the session's level (`logging/setLevel`). 2026-07-28: the
        request's own `_meta` level, and no log lines at all without one."""
        threshold = self.level if self.modern else self.session.log_level
        return (not self.cancelled and threshold is not None
                and LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold))

    async def heartbeat(self, label):
        """Report progress every PROGRESS_INTERVAL until cancelled (keeps client timeouts alive)."""
        started = time.monotonic()
        self.progress(0, message="started %s" % label)
        while True:
            await asyncio.sleep(PROGRESS_INTERVAL)
            elapsed = time.monotonic() - started
            self.progress(round(elapsed, 1), message="%s running for %.0f s" % (label, elapsed))


def wire_error(exc: BaseException, log=None) -> McpError:
    """The one rule at each boundary (a request, a task): an McpError is answered as it is; anything else is a
    bug, logged and answered as an internal error."""
    if isinstance(exc, McpError):
        return exc
    if log:
        log.error("internal error: %r", exc)
    return McpError(INTERNAL_ERROR, "Internal error: %s" % exc)


def _error_response(request_id, error: McpError):
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}


def _invalid_request(request_id, problem):
    return _error_response(request_id, McpError(INVALID_REQUEST, "Invalid request: " + problem))


def _invalid_params(problem, data=None):
    """A -32602 error: "Invalid params: " and the problem."""
    return McpError(INVALID_PARAMS, "Invalid params: " + problem, data)


class Session:
    """One JSON-RPC peer over a transport: parses, dispatches, answers, cancels.

    Requests are handed to `dispatcher(method, params, ctx)`, which returns a
    result, a coroutine (run as a task, so calls overlap), or raises McpError;
    this is the one place where exceptions become JSON-RPC errors. A
    cancelled request gets no response.
    """

    def __init__(self, transport, dispatcher, log: Log, on_notification=None):
        self.transport = transport
        self.dispatcher = dispatcher
        self.on_notification = on_notification
        self.log = log
        self.inflight = {}  # request id -> (task, CallContext)
        self.pending = {}   # id of a request we sent the client -> the future of its answer
        self.client_capabilities = {}  # what the client declared in `initialize`
        self.protocol_version = None   # what `initialize` agreed
        self.client_info = {}          # its `clientInfo`, and who it is, for the audit log and rate limits
        self.caller, self.label = None, "stdio"
        self.person = None  # the signed-in person's subject (serve --http with signIn or people)
        self.log_level = "info"
        self.level_chosen = False  # whether the client sent logging/setLevel (then a command's lines are logged too)
        self.closed = False
        self.aborted = None  # the error requests cancelled by cancel_all(reason=...) are answered with

    # -- incoming ---------------------------------------------------------------

    def receive(self, data, framing):
        """One framed message (or a framing error) from the transport: dispatch it."""
        if self.closed:
            return  # shutting down: what arrives now is not started
        if isinstance(data, McpError):  # the framing failed (see StdioFraming)
            self.transport.send(_error_response(None, data), framing)
            return
        if self.log.file:
            self.log.wire("->", data)
        self.transport.heard(framing)
        try:
            message = json.loads(data)
        except BAD_JSON as exc:
            self.transport.send(_error_response(None, McpError(PARSE_ERROR, "Parse error: %s" % exc)), framing)
            return
        if isinstance(message, list):
            if not message:
                self.transport.send(_invalid_request(None, "empty batch"), framing)
                return
            asyncio.ensure_future(self._batch(message, framing))
            return
        outcome = self._handle(message)
        if isinstance(outcome, dict):
            self.transport.send(outcome, framing)
        elif outcome:
            self._start(outcome, framing)

    def _start(self, outcome, framing):
        """Run a request's coroutine as a task; with a framing, send its answer when done."""
        request_id, coroutine, ctx = outcome
        task = asyncio.ensure_future(self._complete(request_id, coroutine))
        self.inflight[request_id] = (task, ctx)

        def done(task):
            self.inflight.pop(request_id, None)
            coroutine.close()  # a request cancelled before it started never ran its coroutine
            if framing and not task.cancelled() and not task.exception():
                self.transport.send(task.result(), framing)
            elif task.cancelled() and framing and self.aborted is not None:  # the server stops: it says so
                self.transport.send(_error_response(request_id, self.aborted), framing)
            elif task.cancelled():
                self.transport.ended(request_id)  # HTTP: end the stream that waited for it
        task.add_done_callback(done)
        return task

    async def _batch(self, messages, framing):
        replies = []
        for message in messages:
            outcome = self._handle(message)
            if isinstance(outcome, tuple) and message.get("method") == "subscriptions/listen":
                self._start(outcome, framing)  # it lasts as long as the client listens: answered on its own
                continue
            replies.append(self._start(outcome, None) if isinstance(outcome, tuple) else outcome)
        answers = []
        for reply in replies:
            if isinstance(reply, asyncio.Future):
                try:
                    reply = await reply
                except asyncio.CancelledError:
                    reply = None
            if reply:
                answers.append(reply)
        if answers:
            self.transport.send(answers, framing)

    def _handle(self, message):
        """Return None (nothing to send), a response dict, or (id, coroutine, ctx)."""
        if not isinstance(message, dict):
            return _invalid_request(None, "expected a JSON object")
        request_id = message.get("id")
        if request_id is not None and (isinstance(request_id, bool) or not isinstance(request_id, ID_TYPES)):
            return _invalid_request(None, "`id` must be a string or an integer")
        if message.get("jsonrpc") != "2.0":
            return _invalid_request(request_id, '`jsonrpc` must be "2.0"')
        method = message.get("method")
        if method is None:
            if "result" in message or "error" in message:
                future = self.pending.get(request_id)
                if future and not future.done():
                    future.set_result(message)
                return None  # a response to a request of ours (or to one given up on: dropped)
            return _invalid_request(request_id, "no `method`")
        if not isinstance(method, str):
            return _invalid_request(request_id, "`method` must be a string")
        params = message.get("params")
        if "id" not in message:
            self._notification(method, _object(params))
            return None
        if request_id is None:
            return _invalid_request(None, "`id` must not be null")
        if request_id in self.inflight:
            return _invalid_request(request_id, "id %s is already in use by a request in progress" % json.dumps(request_id))
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _error_response(request_id, _invalid_params("expected an object"))
        ctx = CallContext(self, request_id, _object(params.get("_meta")).get("progressToken"))
        try:
            result = self.dispatcher(method, params, ctx)
        except Exception as exc:  # the boundary: nothing escapes as a crash
            return _error_response(request_id, wire_error(exc, self.log))
        if asyncio.iscoroutine(result):
            return request_id, result, ctx
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _complete(self, request_id, coroutine):
        """Run a request's coroutine to a response dict."""
        try:
            return {"jsonrpc": "2.0", "id": request_id, "result": await coroutine}
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            return _error_response(request_id, wire_error(exc, self.log))

    def _notification(self, method, params):
        if method == "notifications/cancelled":
            self.cancel(params.get("requestId"), params.get("reason", ""))
        elif self.on_notification:
            self.on_notification(method, params, self)

    def cancel(self, request_id, reason):
        """Stop the request `request_id` still runs (the client's notifications/cancelled, or its transport saw it
        leave); nothing if there is none."""
        entry = self.inflight.get(request_id) if isinstance(request_id, ID_TYPES) else None
        if entry:
            self.log.debug("cancelling request %r: %s", request_id, reason)
            entry[1].cancelled = True
            entry[0].cancel()

    # -- outgoing ---------------------------------------------------------------

    def notify(self, method, params, related=None):
        """Send a notification; `related` is the id of the request it belongs to, if any."""
        self.transport.send({"jsonrpc": "2.0", "method": method, "params": params}, related=related)

    async def request(self, method, params, timeout, related=None):
        """Ask the client (an upstream's sampling, elicitation or roots request), on the stream of the
        request `related` names, if any: its result, or its error as McpError. Given up on (a timeout,
        a cancel), the client is told with notifications/cancelled."""
        request_id = "mcpstudio-%s" % os.urandom(6).hex()
        future = self.pending[request_id] = asyncio.get_running_loop().create_future()
        self.transport.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, related=related)
        try:
            reply = await asyncio.wait_for(future, timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            timed_out = isinstance(exc, asyncio.TimeoutError)
            self.notify("notifications/cancelled", {"requestId": request_id, "reason": "timed out after %g s"
                                                    % timeout if timed_out else "the server cancelled it"})
            if timed_out:
                raise McpError(INTERNAL_ERROR, "the client did not answer %s within %g s" % (method, timeout))
            raise
        finally:
            self.pending.pop(request_id, None)
        error = reply.get("error")
        if isinstance(error, dict):
            raise McpError(error.get("code", INTERNAL_ERROR), str(error.get("message", "")), error.get("data"))
        return reply.get("result")

    def log_to_client(self, level, text, logger, meta=None):
        """Send `notifications/message` when `level` reaches the client's chosen level (as for a request of no id)."""
        CallContext(self, None).log(level, text, logger, meta)

    async def cancel_all(self, grace=0.0, reason=None):
        """Stop taking requests; give those in flight `grace` seconds, then cancel the rest (answered with the
        McpError `reason` when given, else with nothing)."""
        self.closed = True
        self.aborted = reason
        tasks = [task for task, _ in self.inflight.values()]
        if tasks and grace > 0:
            await asyncio.wait(tasks, timeout=grace)
        tasks = [task for task, ctx in self.inflight.values() if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=KILL_GRACE + 2)


TASK_SUPPORT = ("forbidden", "optional", "required")  # a tool's `execution.taskSupport`


_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri", "tasks/get": "taskId",
          "tasks/update": "taskId", "tasks/cancel": "taskId"}  # 2026-07-28: what the Mcp-Name header repeats


# --------------------------------------------------------------------------
# A command's life: output as it comes, prompts answered, results within a budget, files
# --------------------------------------------------------------------------
# Everything between a started command and its result, for any source that runs
# one: the output feed (progress, log lines), a prompt it asks answered through the
# client, file arguments written into a per-call folder and files collected from it,
# the output cut to its budget and kept whole as a resource, and the failure told.

class OutputFeed:
    """What a running command shows its caller: a heartbeat, and its output lines as they come (as
    progress messages, `info` log lines and its task's status message), the latest FEED_LINES lines
    at most every FEED_INTERVAL."""

    def __init__(self, ctx: CallContext, label, logger, streams=(1, 2)):
        self.ctx = ctx
        self.logger = logger
        self.logs = (ctx.modern or ctx.session.level_chosen) and ctx.wants("info")  # 2026-07-28: a level in `_meta`
        self.streams = streams if ctx.progress_token is not None or ctx.running is not None or self.logs else ()
        self.partial = {}  # fd -> the end of a line not ended yet
        self.lines = collections.deque(maxlen=FEED_LINES)
        self.started = time.monotonic()
        self.sent = 0.0
        self.timer = None
        self.heartbeat = asyncio.ensure_future(ctx.heartbeat(label)) if ctx.progress_token is not None else None
        self.job = self.problem = None  # a PromptWatch's job, and why it stopped the call
        self.tail, self.said = b"", 0.0  # the output's end, and when it came (a PromptWatch's question is there)

    def add(self, fd, data):
        """Bytes the command wrote to `fd`; a line they end is passed on now, or when the interval is up."""
        self.tail, self.said = (self.tail + data)[-4000:], time.monotonic()
        if fd not in self.streams:
            return
        pieces = (self.partial.get(fd, b"") + data).split(b"\n")
        self.partial[fd] = pieces.pop()[:FEED_LINE]
        for piece in pieces[-FEED_LINES:]:
            self.lines.append(_clip(_decoded(piece.rstrip(b"\r")), FEED_LINE))
        if pieces and not self.timer:
            self.timer = asyncio.get_running_loop().call_later(self.sent + FEED_INTERVAL - time.monotonic(), self.send)

    def send(self):
        self.timer = None
        self.sent = time.monotonic()
        text = "\n".join(self.lines)
        self.lines.clear()
        self.ctx.progress(round(self.sent - self.started, 3), message=text)
        if self.logs:
            self.ctx.log("info", text, self.logger)
        if self.ctx.running:
            self.ctx.running.message = plain_text(text.rpartition("\n")[2])

    def close(self):
        """The call ends: nothing more is sent for it."""
        for job in (self.heartbeat, self.timer, self.job):
            if job:
                job.cancel()
        self.job = None  # its frames (the pipe, the output) go with it, not with the next garbage collection


_SECRET_PROMPT = re.compile(
    r"pass\s*(word|phrase|code)|passwd|\bpwd\b|token|\b(pin|otp|pat|totp|mfa|2fa)\b|secret|api.?key|credential"
    r"|private key|(verification|security|auth\w*|access|recovery|backup|login|sms|one.time|2fa|mfa)\s+code"
    r"|kennwort|passwort|mot de passe|contrase|senha|parola d|wachtwoord|has\u0142o|\u043f\u0430\u0440\u043e\u043b"
    r"|\u5bc6\u7801|\u5bc6\u78bc|\u30d1\u30b9\u30ef\u30fc\u30c9|\uc554\ud638|\ube44\ubc00\ubc88\ud638", re.I)
# Programs that ask for secrets (keys, passphrases, passwords): whatever their prompt says, never asked in a form.
SECRET_PROGRAMS = tuple(("openssl gpg gpg2 ssh-keygen ssh-add ssh scp sftp passwd su kinit htpasswd age cryptsetup keytool "
                         "vault op pass doas").split())
_YES_NO = re.compile(r"[\[(]\s*y(es)?\s*/\s*no?\s*[\])]", re.I)
_MENU = re.compile(r"^[ \t]*(\d+)[.):][ \t]+(\S.*)", re.M)


def elicitation_form(message, properties):
    """elicitation/create params: a form that asks for each of `properties` (JSON schemas by name)."""
    return {"mode": "form", "message": message,
            "requestedSchema": {"type": "object", "properties": properties, "required": list(properties)}}


def asks_secrets(words):
    """Whether a command of these (literal) words is a program known to ask for secrets, or `sudo -S`."""
    names = [os.path.basename(str(word)) for word in words]
    return any(name in SECRET_PROGRAMS for name in names) or "sudo" in names and "-S" in names


def prompt_form(tail):
    """(prompt, schema) for the question a command's output `tail` ends with (its unfinished last line): a yes/no
    prompt asks a boolean, one right after numbered lines an enum of them, others a string; a secret's schema is None."""
    before, _, prompt = tail.rpartition("\n")
    menu = re.search(r"(%s\n\s*)+\Z" % _MENU.pattern, before + "\n", re.M)  # the numbered lines that end `before`
    choices = ["%s) %s" % item for item in _MENU.findall(menu.group())] if menu else []
    prompt = prompt.strip()
    return prompt, (None if _SECRET_PROMPT.search(prompt) else {"type": "boolean"} if _YES_NO.search(prompt)
                    else {"type": "string", "enum": choices} if choices else {"type": "string"})


def prompt_reply(prompt, schema, value):
    """The line a command gets for the answer `value` to `prompt` (asked with `schema`)."""
    if schema["type"] == "boolean":
        return ("yes" if value else "no") if _YES_NO.search(prompt).group(1) else ("y" if value else "n")
    return str(value).partition(")")[0] if "enum" in schema else str(value)


TASK_AFTER = 0.5               # 2026-07-28: seconds an optional tool's call runs before it becomes a task
ASK_TIMEOUT = 600.0            # seconds a client may take to ask the user for a tool's `ask` parameters


class PromptWatch(OutputFeed):
    """An interactive command's output feed, and its stdin. A question it stops to ask (its output ends without a
    newline, nothing more comes for PROMPT_QUIET s, and where Linux tells, it sleeps reading) is answered by the
    tool's `answers`, else asked of the user as an elicitation form (2026-07-28: an input_required round, the
    command kept alive); a secret, or a client that cannot ask, stops the call with the prompt quoted. A command
    reading with nothing asked gets the end of its input, as from the null device."""

    def __init__(self, ctx: CallContext, label, logger, answers=(), slots=None, secret=False, configured=False):
        super().__init__(ctx, label, logger)
        self.configured = configured  # a config's tool: a refusal names its keys (else the command line's options)
        self.answers = answers  # the tool's, as (pattern, text)
        self.slots = slots      # the semaphore of running commands: a command parked on a 2026-07-28 question leaves it
        self.secret = secret    # a program known to ask for secrets (asks_secrets): each of its prompts is one

    def begin(self, pid, pipe):
        """The command `pid` runs with `pipe` as its stdin: watch it for questions until the call ends."""
        self.job = asyncio.ensure_future(self.watch(pid, pipe))

    async def watch(self, pid, pipe):
        self.said = time.monotonic()  # what it wrote before reading may still be on the way
        stdin = _stdin_link(pipe)
        for _ in range(PROMPT_ROUNDS):
            delay = PROMPT_QUIET  # doubled while it stays quiet and does not read, up to PROMPT_BACKOFF
            while time.monotonic() - self.said < PROMPT_QUIET or not _reading(pid, self.tail[-1:] not in b"\n", stdin):
                said = self.said
                await asyncio.sleep(delay)
                delay = PROMPT_QUIET if self.said != said else min(delay * 2, PROMPT_BACKOFF)
            text = _decoded(self.tail)
            prompt, schema = prompt_form(text)
            reply = await self.answer(text.strip(), prompt, None if self.secret else schema) if prompt else None
            self.tail, self.said = b"", time.monotonic()
            if reply is None:
                break
            pipe.write(reply.encode() + b"\n")
        if not self.problem:
            pipe.write_eof()
        else:
            _signal_group(pid, hard=False)

    async def answer(self, text, prompt, schema):
        """The line that answers `prompt` (`text`: the output since the last answer, the form's message, where a
        menu shows); None with `problem` set when it may not or cannot be asked."""
        ctx, said = self.ctx, "Stopped: `%s` asked \"%s\"" % (self.logger, prompt)
        for pattern, reply in self.answers:
            if pattern.search(prompt):
                return reply
        # how to keep it from asking: a config's keys, or the command line's options (template mode has no config)
        ways = ({"environment": "\"environment\" in the config", "answer": "as a scripted answer (\"answers\" on this "
                 "tool)", "off": "answer it in the config (\"answers\" on this tool), or set \"interactive\": false"}
                if self.configured else {"environment": "--env NAME=VALUE",
                                         "answer": "on its stdin (--stdin TEXT, ending in a newline)",
                                         "off": "or give it the answer on its stdin (--stdin TEXT, ending in a newline)"})
        if not schema:
            self.problem = ("%s, a secret, which is never asked in a form. Give it to the command another way: in "
                            "its environment (%s), or a file or option it reads; or %s."
                            % (said, ways["environment"], ways["answer"]))
        elif not (ctx.prompts and not ctx.task if ctx.modern else ctx.declared("elicitation")):
            self.problem = ("%s, and %s. Make the command not ask (an option such as --yes), %s." % (said, (
                                "it runs as a task (its taskSupport is \"required\", or it ran past %s s for a client "
                                "that takes tasks), which cannot ask the client; \"taskSupport\": \"forbidden\" keeps "
                                "its questions" % TASK_AFTER
                                if ctx.modern and ctx.task and ctx.declared("elicitation") else
                                "this client cannot answer (it declared no elicitation capability)"), ways["off"]))
        else:
            form = elicitation_form(plain_text(text[-1000:]), {"answer": dict(schema, title=plain_text(prompt, False))})
            parked = ctx.modern and self.slots  # answered by a retry that may never come: no slot meanwhile
            if parked:
                self.slots.release()
            try:
                answer = await (ctx.prompts.ask(ctx, "elicitation/create", form) if ctx.modern else
                                ctx.session.request("elicitation/create", form, ASK_TIMEOUT, related=ctx.request_id))
            except McpError as exc:
                answer = {"action": exc.message}
            finally:
                if parked:  # shielded: a cancel here still leaves the slot taken for the caller's release
                    await asyncio.shield(self.slots.acquire())
            value = (answer.get("content") or {}).get("answer")
            if answer.get("action") == "accept" and value is not None:
                problems = validate(value, schema, "the answer") or (
                    ["the answer has a line break (a command's question takes one line)"]
                    if isinstance(value, str) and re.search(r"[\r\n]", value) else [])
                if problems:  # "no" to a yes/no question is not a yes; one line answers one question
                    self.problem = "%s, and the user's answer does not fit: %s." % (said, "; ".join(problems))
                    return None
                ctx.asked = True  # a result that depends on a person's answer: never cached
                return prompt_reply(prompt, schema, value)
            self.problem = "%s, and the user's answer was %s." % (said, json.dumps(answer.get("action")))
        return None


_IMAGE_TYPES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _image_type(data):
    for magic, mime in _IMAGE_TYPES:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def text_block(text):
    """MCP text content."""
    return {"type": "text", "text": text}


def _as_text(data, cut):
    """`data` as text if it is UTF-8; when it was cut, a character split by the cut is dropped."""
    for end in range(len(data), len(data) - (4 if cut else 1), -1):
        try:
            return data[:end].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


_MARKS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))


def _marked_text(data, cut):
    """Output that says its encoding, as text: after a byte-order mark (UTF-8, or UTF-16, as Windows PowerShell,
    `reg` and Notepad's files through `type` write it), the mark dropped, or UTF-16LE without one (`cmd /u`: a
    NUL after each byte of ASCII text); else None. UTF-16 is text only when every character but blanks is
    printable and, past 16 characters, it has a blank or a line end (bytes that merely start with FF FE are no text),
    and not when cut by an odd count of bytes."""
    mark, encoding = next(((mark, name) for mark, name in _MARKS if data.startswith(mark)), (b"", "utf-16-le"))
    if not mark and (len(data) < 4 or data[1] or data[1::2].strip(b"\0") or b"\0" in data[0::2]):  # (data[1]: no copy)
        return None
    body = data[len(mark):]
    if encoding != "utf-8" and cut % 2:
        return None
    for end in range(len(body), len(body) - (4 if cut else 1), -1):
        try:
            text = body[:end].decode(encoding)
        except UnicodeDecodeError:
            continue
        if encoding == "utf-8" or "".join(text.split()).isprintable() and (
                len(text) <= 16 or any(character.isspace() for character in text)):
            return text  # (binary after FF FE reads as no text: something unprintable, or no blank in it)
        return None
    return None


def _output_text(data, cut):
    """A command's output as text: marked with its encoding (a byte-order mark), UTF-8, or (on Windows) the ANSI
    code page, never an image; else None."""
    text = _marked_text(data, cut or 0)
    if text is None:
        text = _as_text(data, bool(cut))
    return text if text is not None or _image_type(data) else _local_text(data, bool(cut))


def command_text(data):
    """A command's whole output as a parser (JSON) reads it: as `_output_text` does, so a byte-order mark or
    the ANSI code page does not make it invalid; ValueError when it is not text."""
    text = _output_text(data, 0)
    if text is None:
        raise ValueError("the output is not text (neither UTF-8 nor, on Windows, the ANSI code page)")
    return text


def cut_binary(data, cut):
    """A sentence when `data` is binary output cut short by the output limit, else None.

    A cut image or file is broken, so it is never served as content."""
    if not cut or _output_text(data, cut) is not None:
        return None
    return ("The output (%s) passed the output limit: %d bytes of its middle were dropped, so it is not "
            "served: a cut file is broken. Raise the limit (--max-output) to get it whole."
            % (_image_type(data) or "binary data", cut))


def _file_mime(name):
    if name.endswith(".md"):
        return "text/markdown"
    import mimetypes
    return mimetypes.guess_type(name, strict=False)[0] or "application/octet-stream"


def media_content(name, data, uri):
    """Bytes as MCP content that is not text: an image or audio (by their first bytes or `name`), else an
    embedded blob."""
    mime = _image_type(data) or _file_mime(name)
    encoded = base64.b64encode(data).decode("ascii")
    if mime.startswith(("image/", "audio/")):
        return {"type": mime.split("/")[0], "data": encoded, "mimeType": mime}
    return {"type": "resource", "resource": {"uri": uri, "mimeType": mime, "blob": encoded}}


def output_content(data, uri, cut):
    """stdout as MCP content: text when it is UTF-8 (on Windows, or in the ANSI code page), an image, or an
    embedded blob.

    When the output was cut (`cut` bytes), a character split by the cut is
    dropped, and binary output is replaced by a sentence saying so."""
    text = _output_text(data, cut)
    if text is not None:
        return text_block(text)
    if cut:
        return text_block(cut_binary(data, cut))
    return media_content("", data, uri)  # an image, or a blob of no known type


OUTPUT_URI = "mcpstudio://output/"
OUTPUT_KEEP_COUNT = 100         # whole outputs kept to be read back; the oldest go first
OUTPUT_KEEP_BYTES = 64 << 20    # ... and their bytes together (one larger output is kept alone)
OUTPUT_KEEP_SECONDS = 3600.0


def fit_text(text, budget, uri, kept="whole"):
    """`text` if it holds at most `budget` characters, else its head and tail (cut at line ends
    where it can) around one line that says what was left out and how to read it (`kept`: what the
    resource holds, "whole" or, past the output limit, "kept" output)."""
    if len(text) <= budget:
        return text
    half = budget // 2
    head_end = text.rfind("\n", 0, half) + 1 or half
    tail_start = text.find("\n", len(text) - half) + 1 or len(text) - half
    head, middle = text[:head_end], text[head_end:tail_start]
    first = head.count("\n") + 1
    last = first + middle.count("\n") - middle.endswith("\n")
    return ("%s%s[... %d lines (%d bytes) left out here: read them with resources/read %s?lines=%d-%d; "
            "the %s output is %s ...]\n%s" % (
                head, "" if head.endswith("\n") else "\n", last - first + 1, len(middle.encode("utf-8")), uri,
                first, last, kept, uri, text[tail_start:]))


def _line_start(data, offset, lines):
    """Where the line `lines` lines after the one at `offset` begins (len(data) past the end), found by walking
    only that far: a slice near the top of a large output reads only the top."""
    for _ in range(max(lines, 0)):
        found = data.find(b"\n", offset)
        if found < 0:
            return len(data)
        offset = found + 1
    return offset


def output_slice(data, query):
    """The lines of a kept output that its URI's query names: `lines=FROM-TO` (numbered from 1, both
    included, either one left out for the start or the end)."""
    if not query:
        return data
    match = re.fullmatch(r"lines=([0-9]*)-([0-9]*)", query)
    if not match:
        raise ValueError("expected ?lines=FROM-TO (line numbers from 1; either may be left out), not ?%s" % query)
    first, last = match.groups()
    index = max(int(first or 1), 1) - 1
    begin = _line_start(data, 0, index)
    return data[begin:_line_start(data, begin, int(last) - index) if last else len(data)]


class OutputBudget:
    """One call's room for output text: a stream past it shows its head and tail, and is kept
    whole in the OutputStore with a `resource_link` to it. Without a store the room is unlimited."""

    def __init__(self, store: OutputStore | None, ctx, chars):
        self.store = store
        self.owner = ctx.owner
        self.chars = chars
        self.links = []
        self.linked = ctx.modern or (ctx.session.protocol_version or "") >= "2025-06-18"  # the first with resource_link

    def fit(self, data, text, share=1.0, cut=0):
        """`text` (decoded from `data`) within `share` of the room left; `cut`: the bytes the output limit
        dropped from its middle (then the resource holds what was kept, and says so)."""
        limit = int(self.chars * share)
        if self.store is not None and len(text) > limit:
            uri = self.store.keep(data, self.owner)
            text = fit_text(text, limit, uri, "kept" if cut else "whole")
            if self.linked:
                self.links.append({"type": "resource_link", "uri": uri, "name": "output" if not cut else "kept output",
                                   "mimeType": "text/plain", "size": len(data), "description": (
                                       "the output's head and tail, %d bytes of its middle dropped by the output limit "
                                       "(--max-output), of which the result shows a part" % cut if cut else
                                       "the whole output, of which the result shows a part")})
        self.chars = max(self.chars - len(text), 0)
        return text

    def for_error(self):
        """What is left, cut to the room of an error result (ERROR_MAX_TEXT: clients cut longer ones themselves)."""
        self.chars = min(self.chars, ERROR_MAX_TEXT)


DATA_URI_HEADER_MAX = 1024      # characters of a data: URI before its comma (type and parameters)
FILE_NAME_MAX = 100             # characters of a file argument's name (its `;name=`), longer ones cut
# The names Windows keeps for devices (any extension, any case): a file given one is made a file by a "_" in front,
# on every system, so a call names the same file everywhere. A trailing dot, which Windows drops, is dropped too.
_DEVICE_NAMES = frozenset(["CON", "PRN", "AUX", "NUL"] + ["%s%d" % (port, n) for port in ("COM", "LPT") for n in range(10)])


def parse_data_uri(value):
    """(`name=` parameter or None, base64 text) of data:<type>[;<parameter>...];base64,<data>; ValueError
    for anything else. Linear whatever the value: a header longer than DATA_URI_HEADER_MAX is refused
    before it is split (a backtracking pattern here once stalled every session on a hostile value)."""
    if not value.startswith("data:"):
        raise ValueError("not a data: URI")
    comma = value.find(",", 0, DATA_URI_HEADER_MAX + 6)
    if comma < 0:
        raise ValueError("no comma within %d characters" % DATA_URI_HEADER_MAX)
    parameters = value[5:comma].split(";")
    if len(parameters) < 2 or parameters[-1] != "base64":
        raise ValueError("not base64")
    names = [part[5:] for part in parameters[1:-1] if part.startswith("name=")]
    return (names[0] if names else None), value[comma + 1:]


def _file_name(given):
    """A file argument's name made safe: its last part (after any `/`, `\\` or `:`, on every system: Windows read
    `C:\\Users\\me\\a.txt` and `x:a.txt` as `a.txt`, POSIX as `C__Users_me_a.txt` and `x_a.txt`), letters, digits
    and `._-` only, never a leading dot or dash (a hidden file, an option) nor a trailing dot (which Windows drops), a device name of Windows (_DEVICE_NAMES)
    with a "_" in front, at most FILE_NAME_MAX characters (its extension kept)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", re.split(r"[/\\:]", given)[-1]).lstrip(".-").rstrip(".")
    if name.partition(".")[0].upper() in _DEVICE_NAMES:
        name = "_" + name  # on Windows CON, NUL.txt ... name a device wherever they stand, not a file
    if len(name) > FILE_NAME_MAX:  # cut after the "_" is put in front, which the cut keeps
        stem, extension = os.path.splitext(name)
        name = (stem[:FILE_NAME_MAX - len(extension)] + extension if len(extension) <= 16
                else name[:FILE_NAME_MAX].rstrip("."))
    return name


def write_file_argument(key, value, folder, limit):
    """A file parameter's value, data:<type>[;name=<file name>];base64,<data>, written into a folder of
    its own in `folder` (no two files meet, whatever their names); its path."""
    try:
        given, encoded = parse_data_uri(value)
        size = len(encoded) // 4 * 3 - encoded[-2:].count("=")  # what it decodes to, checked before decoding
        if size > limit:
            raise ToolError("`%s` is %d bytes, more than the %d a file may have (--max-output)" % (key, size, limit))
        data = base64.b64decode(encoded, validate=True)
    except ValueError:  # not a data: URI; not base64
        raise ToolError("`%s` is a file: give it as a data: URI (data:image/png;name=a.png;base64,iVBOR...) or the URI "
                        "of a resource this server serves (mcpstudio://output/...), not %s"
                        % (key, json.dumps(_clip(value, 40)))) from None
    path = os.path.join(folder, key, _file_name(given or "") or key)
    try:
        os.mkdir(os.path.dirname(path))
        with open(path, "xb") as f:
            f.write(data)
    except OSError as exc:  # its message, never the private folder's path
        raise ToolError("`%s`: the file could not be written: %s" % (key, exc.strerror or type(exc).__name__)) from None
    return path


def call_folders():
    """The one per-user parent of the folders calls write files in (TMPDIR/mcpstudio-USER, mode 0700), or None when
    it is not a private folder of this user (then each call's folder is a plain private temporary folder)."""
    import tempfile
    user = str(os.getuid()) if _POSIX else re.sub(r"[^A-Za-z0-9_-]", "_", os.environ.get("USERNAME", "user"))
    parent = os.path.join(tempfile.gettempdir(), "mcpstudio-" + user)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(parent, 0o700)
        info = os.lstat(parent)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or _POSIX and (info.st_uid != os.getuid() or info.st_mode & 0o077):
        return None  # planted by someone else: never used
    return parent


def call_folder():
    """A fresh private folder for one call's files, named by this process (its id first: swept once it is gone)."""
    import tempfile
    parent = call_folders()
    return tempfile.mkdtemp(prefix="%d-" % os.getpid() if parent else "mcpstudio-", dir=parent)


def sweep_call_folders():
    """Remove the call folders of servers that are gone (killed before they could remove their own)."""
    import shutil
    parent = call_folders()
    for name in os.listdir(parent) if parent else ():
        owner = name.partition("-")[0]
        if owner.isdigit() and int(owner) != os.getpid() and not _process_alive(int(owner)):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def _quote(name):
    """A file name as a URI's last segment: percent-encoded (control characters never reach a client raw)."""
    from urllib.parse import quote
    return quote(name, safe="")


def _is_uri(value):
    return isinstance(value, str) and re.match(r"[a-z][a-z0-9+.-]*://", value) is not None


OUTPUT_FOLDER_FILES = 20        # files of an output folder a result shows; their bytes together are within --max-output


def read_output_file(path, limit):
    """The bytes of a file a command left in its output folder; "large" for one of more than `limit` bytes (not
    read), None for one that is not a plain file of its own (a link, a folder, a FIFO, a hard link to a file
    elsewhere). Opened without following a link or blocking, checked on the descriptor, read no further than
    the limit (a file still growing)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            return None
        data = f.read(limit + 1) if info.st_size <= limit else b""
        return data if info.st_size <= limit and len(data) <= limit else "large"


def file_content(name, data, uri, budget: OutputBudget):
    """A file a command wrote, as MCP content: image, audio, text (within `budget`), else an embedded blob."""
    block = media_content(name, data, uri)
    text = _as_text(data, False)
    if block["type"] == "resource" and text is not None:
        return text_block(budget.fit(data, text))
    return block


def _signal_name(number):
    try:
        return "%s (%d)" % (signal.Signals(number).name, number)
    except ValueError:
        return str(number)


def describe_failure(result: ProcessResult, timeout, subject=None, ok_exit=(0,)):
    """One sentence for a command that did not succeed, or None when it did.

    `subject` names the command in the sentence (default: its base name);
    `ok_exit` are the exit codes that mean success (grep's 1 is "no match").
    """
    command = subject or "`%s`" % (os.path.basename(str(result.argv[0])) if result.argv else "command")
    if result.status == "not-found":
        return "Command not found: `%s` is not on PATH (or the path does not exist)." % result.argv[0]
    if result.status == "denied":
        return "Permission denied: `%s` could not be run (is it executable?)." % result.argv[0]
    if result.status == "error":
        return "%s could not be started: %s" % (command, result.error)
    if result.status == "timeout":
        return "%s timed out after %g s and was stopped; raise its time limit if it needs longer." % (
            command, timeout)
    if result.returncode is not None and result.returncode < 0:
        return "%s was killed by signal %s." % (command, _signal_name(-result.returncode))
    if result.returncode and result.returncode not in ok_exit:
        return "%s exited with code %d." % (command, result.returncode)
    return None


def check_read(uri, result: ProcessResult, timeout, subject=None):
    """Raise the error of a resource read whose command did not succeed (with the end of its stderr)."""
    failure = describe_failure(result, timeout, subject)
    if failure:
        detail = _decoded(result.stderr).strip()[-500:]
        raise McpError(INTERNAL_ERROR, "Reading %s failed: %s%s" % (uri, failure, (" " + detail) if detail else ""),
                       {"uri": uri, "exitCode": result.returncode})


def limit_note(stream, cut):
    """The line a result ends with when the output limit dropped `cut` bytes from the middle of `stream`."""
    return ("[%s: %d bytes from the middle were dropped by the output limit (--max-output); its first and last "
            "bytes are kept, and a line marks the place]" % (stream, cut))


def command_result(result: ProcessResult, timeout, uri, ok_exit, budget):
    """A CallToolResult for a finished command: its output (within `budget`), and why it failed if it did."""
    content = []
    broken = cut_binary(result.stdout, result.stdout_cut)
    failure = describe_failure(result, timeout, ok_exit=ok_exit) or broken
    if failure:
        content.append(text_block(failure))
        budget.for_error()
    stderr = budget.fit(result.stderr, _decoded(result.stderr), 0.25, result.stderr_cut)
    if (result.stdout and not broken) or not (failure or result.stderr):
        block = output_content(result.stdout, uri, result.stdout_cut)
        if block["type"] == "text" and not block["text"] and not failure:
            block["text"] = "(no output%s)" % (", exit code %d" % result.returncode if result.returncode else "")
        elif block["type"] == "text":
            block["text"] = budget.fit(result.stdout, block["text"], cut=result.stdout_cut)
        content.append(block)
    if result.stdout_cut:
        content.append(text_block(limit_note("stdout", result.stdout_cut)))
    if result.stderr:
        if result.stderr_cut:
            stderr += "\n" + limit_note("stderr", result.stderr_cut)
        content.append(text_block("[stderr]\n" + stderr))
    return {"content": content + budget.links, "isError": failure is not None}


def _unstarted_in_task(result: ProcessResult, ctx: CallContext, timeout):
    """A task whose command could not be started at all fails with a JSON-RPC error (the server cannot
    run the tool), where a plain call answers a tool error; a command that ran and failed is a result."""
    if ctx.task and result.status in ("not-found", "denied", "error"):
        raise McpError(INTERNAL_ERROR, describe_failure(result, timeout))


def confine_path(key, value, folder):
    """The real path of `value` (relative to `folder`, symlinks followed), which must be inside
    `folder`; a ToolError that says so otherwise. The command receives this absolute path."""
    if "\0" in value:
        raise ToolError("`%s` holds a NUL character, which no path can" % key)
    real = os.path.realpath(os.path.join(folder, value))
    try:
        inside = os.path.commonpath([real, folder]) == folder
    except ValueError:  # another drive
        inside = False
    if not inside:
        raise ToolError("`%s` (%r) leads outside %s (after `..` and symlinks are followed, it is %s). Give a "
                        "path inside that folder, relative to it" % (key, _clip(value, 60), folder, real))
    return real


# --------------------------------------------------------------------------
# Sources: template tools
# --------------------------------------------------------------------------

class Source:
    """The contract every source keeps, so the catalog and the server never need to know their kind
    (nor ask whether a source has a capability): `list_tools()` (MCP Tool dicts under original names),
    `call_tool(name, arguments, ctx)` (a CallToolResult, or a ToolError for a call that cannot go ahead: the
    server answers it, see tool_result), and where `resources` is true, `list_resources()`,
    `list_resource_templates()` and `read_resource(uri, ctx)`; `start(events)` and `close()` for sources
    with work of their own; `dynamic` when the tool set can change, reported through
    `events.source_changed(source)`. Every other capability has its default here, what a source without
    it answers; a kind of source that has it overrides it."""

    dynamic = False        # its tool set can change while serving (list_changed)
    resources = False      # it serves resources
    prompts = False        # it serves prompts (list_prompts, get_prompt)
    completions = False    # it completes arguments (complete)
    subscribable = False   # it takes resource subscriptions (subscribe)
    skills = False         # it serves skills now (the skills extension is declared)
    skill_methods = False  # skills/list, skills/get and resources/directory/read reach it (it may learn of skills)
    refusal = None         # an McpError every request gets (a config that cannot serve), or None
    reload_signal = None   # what SIGHUP calls (re-read its config), or None
    upstreams = types.MappingProxyType({})  # id -> Upstream: the MCP servers behind it
    events = None          # what it reports changes to (the Server), given by start(events)

    def start(self, events):
        """Begin background work; changes go to `events`."""
        self.events = events

    async def close(self):
        pass

    async def list_tools(self):
        return []

    async def list_resources(self):
        return []

    async def list_resource_templates(self):
        return []

    async def read_resource(self, uri, ctx):
        """MCP contents of `uri`, or None when it is not this source's."""
        return None

    async def list_prompts(self):
        return []

    async def list_skills(self):
        return []

    async def get_skill(self, uri):
        """The skill entry of `uri`, or None when it is not this source's."""
        return None

    async def read_directory(self, uri):
        """The listing of the skill folder `uri`, or None when it is not this source's."""
        return None

    async def subscribe(self, method, uri, ctx):
        """`resources/subscribe` or `unsubscribe` of `uri`, or None when it is not this source's."""
        return None

    async def complete(self, ref, params, ctx):
        """`completion/complete` of `ref`, or None when it is not this source's."""
        return None

    async def await_owner(self, name):
        """Whether `name`, not listed yet, was listed after waiting (a server still starting may own it)."""
        return False

    def schema_of(self, name):
        """The inputSchema of its fixed tool `name` before any listing, or None."""
        return None

    def manager_names(self):
        """The public names of the manager tools it lists."""
        return set()

    def hides(self, name, ctx):
        """Whether the listed tool `name` is not `ctx`'s to see or call."""
        return False

    def denied(self, name):
        """Why a permission leaves out the tool `name` (None: none does)."""
        return None

    def command_line(self, name, arguments):
        """What a call of `name` runs, for the guard's rules and audit line (None: nothing to say)."""
        return None

    def cache_route(self, name):
        """(owner, version, tool) the result cache keys a call of `name` by (see Guard)."""
        return "", "", name

    def question(self, name, arguments):
        """What to ask the user before calling `name` with `arguments` (an elicitation form), or None."""
        return None

    def asks(self, name):
        """Whether `name` runs an interactive command, whose questions are asked in rounds."""
        return False

    def session_started(self, session=None):
        """`initialize` was answered (by `session`, in the handshake era)."""

    def set_level(self, level, session):
        """`session`'s client chose a log level."""

    def client_notification(self, method, params, session):
        """A client's notification for sources (roots/list_changed)."""

    def sweep_instances(self, ended=None):
        """A session ended (`ended`): what runs for it alone stops."""

    def identify(self, instance):
        """Name its parked prompt rounds after `instance` (--http)."""

    def holds(self, state):
        """Whether the `requestState` `state` names a prompt round it holds."""
        return False

    def busy(self):
        """Whether a prompt round of its still waits."""
        return False


class OutputStore(Source):
    """Whole outputs of calls whose results showed only a part: a resource source of
    mcpstudio://output/<id>, bounded in count and bytes, each kept OUTPUT_KEEP_SECONDS.

    An output is read only by the session that made it; 2026-07-28 requests are stateless, so
    there the unguessable id is what grants it (as for tasks). None is listed: each is private to its
    session, and a result's note names its output's URI and how to read a part of it."""

    resources = True

    def __init__(self):
        self.kept = collections.OrderedDict()  # id -> (owner, expires, bytes), oldest first

    def keep(self, data, owner):
        """Keep `data` for `owner` (oldest outputs forgotten past the bounds); return its URI."""
        now = time.monotonic()
        key = os.urandom(16).hex()
        self.kept[key] = (owner, now + OUTPUT_KEEP_SECONDS, data)
        total = sum(len(entry[2]) for entry in self.kept.values())
        while len(self.kept) > 1 and (len(self.kept) > OUTPUT_KEEP_COUNT or total > OUTPUT_KEEP_BYTES
                                      or next(iter(self.kept.values()))[1] <= now):
            total -= len(self.kept.popitem(last=False)[1][2])
        return OUTPUT_URI + key

    async def read_resource(self, uri, ctx):
        """A kept output (only text is kept), or the lines the URI's query names; None for other URIs."""
        if not uri.startswith(OUTPUT_URI):
            return None
        key, _, query = uri[len(OUTPUT_URI):].partition("?")
        entry = self.kept.get(key)
        if not entry or entry[0] != ctx.owner or entry[1] <= time.monotonic():
            raise McpError(RESOURCE_NOT_FOUND, "Output not found: %s (outputs are kept an hour, the last 100 at most, "
                           "for the session that made them; call the tool again)" % uri)
        try:
            data = output_slice(entry[2], query)
        except ValueError as exc:
            raise _invalid_params("%s: %s" % (uri, exc)) from None
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": _decoded(data)}]}


class RunSettings:
    """How a source's commands run: environment, folder, limits, concurrency."""

    def __init__(self, env=None, cwd=None, timeout=DEFAULT_TIMEOUT, max_output=DEFAULT_MAX_OUTPUT,
                 max_concurrency=DEFAULT_MAX_CONCURRENCY, allow_dash_values=False, task_support="optional",
                 max_text=DEFAULT_MAX_TEXT, outputs=None):
        self.env = env
        self.cwd = cwd
        self.timeout = timeout
        self.max_output = max_output
        self.max_text = max_text
        self.outputs = outputs  # the OutputStore that keeps what a result leaves out (None: nothing is left out)
        self.max_concurrency = max_concurrency
        self.allow_dash_values = allow_dash_values
        self.task_support = task_support  # `execution.taskSupport` of the tools that run with these settings
        self._gate = [None]  # the semaphore, shared with derived settings

    @property
    def slots(self):
        """The semaphore that caps running commands (made on the running loop)."""
        if not self._gate[0]:
            self._gate[0] = asyncio.Semaphore(self.max_concurrency)
        return self._gate[0]

    def run(self, runner: ProcessRunner, argv, **options):
        """`runner.run(argv)` with these settings' environment, folder, time limit and output limit,
        unless `options` say otherwise."""
        return runner.run(argv, **{"env": self.env, "cwd": self.cwd, "timeout": self.timeout,
                                   "output_limit": self.max_output, **options})

    def budget(self, ctx: CallContext, whole=False):
        """This call's OutputBudget: unlimited without a store, or for output that is kept `whole` (JSON)."""
        return OutputBudget(None if whole else self.outputs, ctx, self.max_text)

    def derive(self, **overrides) -> RunSettings:
        """A copy with some settings changed, sharing the same concurrency cap."""
        import copy
        other = copy.copy(self)  # shallow: `_gate` stays shared
        for key, value in overrides.items():
            setattr(other, key, value)
        return other


class FileArguments:
    """A tool's files: parameters given as files (a data: URI, or the URI of a resource this server serves) that reach
    the command as paths, and the output folder whose files come back as content. `resolve` reads the resources
    given, `write` puts the files in one call's private folder, `collect` reads the output folder after the run,
    `placeholders` stands in for them where a call is described and not run (the guard's argv)."""

    def __init__(self, name, files, output_folder, file_resources, settings: RunSettings):
        self.name = name  # the tool's, in the URIs of the files it leaves
        self.files = files  # parameters given as files (data: URIs), passed to the command as paths
        self.output_folder = output_folder  # the field that gets a fresh folder whose files come back as content
        self.file_resources = file_resources  # a file may be any resource of this server, not only a kept output
        self.settings = settings

    def __bool__(self):
        return bool(self.files or self.output_folder)

    def placeholders(self, checked):
        """What stands for the files of `checked` arguments in the argv a call would run: a file's path is made when
        it runs."""
        shown = {key: "<file %s>" % (checked[key] if _is_uri(checked[key]) else _hash(checked[key]))
                 for key in self.files if key in checked}
        return dict(shown, **({self.output_folder: "<output folder>"} if self.output_folder else {}))

    async def resolve(self, arguments, ctx: CallContext):
        """`arguments` with each file given as the URI of a resource read (as the call runs: after its rate limit
        and confirmation) and passed on as a data: URI; a ToolError names one that cannot be read."""
        import base64
        given = dict(arguments)
        for key in self.files:
            uri = arguments.get(key)
            if _is_uri(uri):
                try:
                    content = ((await self.read(uri, ctx)).get("contents") or [{"text": ""}])[0]
                except McpError as exc:
                    raise ToolError("`%s`: %s cannot be read: %s" % (key, uri, exc.message)) from None
                given[key] = "data:%s;name=%s;base64,%s" % (
                    content.get("mimeType", ""), re.sub(r"[,;]", "_", uri.partition("?")[0].rpartition("/")[2]),
                    content["blob"] if "blob" in content else base64.b64encode(content.get("text", "").encode()).decode())
        return given

    async def read(self, uri, ctx: CallContext):
        """A resource given as a file: a kept output of this server, or with `file_resources` any resource it
        serves (ctx.read: resources/read)."""
        if self.file_resources and ctx.read:
            return await ctx.read({"uri": uri}, ctx)
        if uri.startswith(OUTPUT_URI) and self.settings.outputs:
            return await self.settings.outputs.read_resource(uri, ctx)
        raise McpError(INVALID_PARAMS, "a file may be a kept output of this server (%s...) only; the tool's "
                       "`file_resources` lets it read the server's other resources" % OUTPUT_URI)

    def write(self, arguments, folder):
        """`arguments` with each file written into `folder` (one call's) and given as its path, and the output
        folder made there."""
        arguments = dict(arguments, **{key: write_file_argument(key, arguments[key], folder, self.settings.max_output)
                                       for key in self.files if key in arguments})
        if self.output_folder:
            arguments[self.output_folder] = os.path.join(folder, "out.d")  # no parameter has this name
            os.mkdir(arguments[self.output_folder])
        return arguments

    def collect(self, result, folder, budget: OutputBudget):
        """Add the files the command left in its output folder (in `folder`) to `result`'s content: at most
        OUTPUT_FOLDER_FILES, their bytes together within --max-output, their text within `budget`."""
        out = os.path.join(folder, "out.d")
        room, shown, over, odd = self.settings.max_output, 0, [], []  # one limit for the folder's files together
        for name in sorted(os.listdir(out) if self.output_folder else []):
            data = read_output_file(os.path.join(out, name), room) if shown < OUTPUT_FOLDER_FILES else "large"
            if not isinstance(data, bytes):
                (odd if data is None else over).append(name)
                continue
            room, shown = room - len(data), shown + 1
            result["content"].append(file_content(name, data, "mcpstudio://%s/%s" % (self.name, _quote(name)), budget))
        for names, why in ((over, "past the %d files and %d bytes together a result shows (--max-output)"
                            % (OUTPUT_FOLDER_FILES, self.settings.max_output)),
                           (odd, "not plain files (links, folders, hard links are never read)")):
            if names:
                result["content"].append(text_block("[output folder: %d not shown, %s: %s]" % (
                    len(names), why, ", ".join(json.dumps(name) for name in names[:10])
                    + (" and %d more" % (len(names) - 10) if len(names) > 10 else ""))))
        return result


# What a command tool is, as the config reader and the command line read it: `schema` and `description` come from
# the template when not given (a config file's `parameters`); `stdin` is a text template fed to the command; `shell`
# runs the template as `sh -c SCRIPT mcpstudio VALUES...`; `within`: argument -> the folder its path must stay in;
# `asked`: parameter -> the question the user is asked when a call leaves it out; `rules`: its rateLimit, cache and
# confirm (see Guard); `files`, `output_folder`, `file_resources`: see FileArguments; `interactive`: its questions
# are answered (PromptWatch); `answers`: [(compiled prompt pattern, answer)], questions answered without asking;
# `configured`: read from a config file (what a refusal advises are its keys; else the command line's options).
ToolSpec = collections.namedtuple("ToolSpec", (
    "name", "template", "description", "title", "annotations", "schema", "defaults", "stdin", "shell", "within",
    "output_format", "ok_exit", "asked", "rules", "files", "output_folder", "interactive", "answers",
    "file_resources", "configured"), defaults=(None, None, {}, None, {}, None, False, {}, "text", (0,), {}, {}, (),
                                               None, True, (), False, False))


def json_result(name, result: ProcessResult, outcome):
    """`"output_format": "json"`: stdout parsed into structuredContent (an object as is, other JSON
    under "result"); stdout that is not JSON makes the call an error that says so."""
    try:
        value = json.loads(command_text(result.stdout))
    except ValueError as exc:
        return {"content": [text_block("`%s` declares \"output_format\": \"json\" but its output "
                                       "is not JSON (%s); the output follows." % (name, exc))] + outcome["content"],
                "isError": True}
    outcome["structuredContent"] = value if isinstance(value, dict) else {"result": value}
    return outcome


def as_text_where_strings(arguments, schema):
    """Numbers given for string properties become their text, and numeric text
    given for number properties becomes a number.

    Clients and models often send `{"limit": 5}` for a string field (or "5"
    for an integer); the value ends up as argv text either way, so refusing
    it would only cost a retry.
    """
    properties = schema.get("properties", {})
    out = dict(arguments)
    for key, value in arguments.items():
        prop = properties.get(key) or {}
        kind = prop.get("type")
        if kind == "string" and isinstance(value, NUMBER):
            out[key] = _text(value)
        elif kind in ("integer", "number") and isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
            number = float(value)
            out[key] = int(number) if kind == "integer" and number.is_integer() and "." not in value else number
        elif kind == "array" and (prop.get("items") or {}).get("type") == "string" and isinstance(value, list):
            out[key] = [_text(v) if isinstance(v, NUMBER) else v for v in value]
    return out


def _argument_help(tool, problems, schema):
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    valid = ", ".join("%s (%s%s)" % (k, v.get("type", "any"), ", required" if k in required else "")
                      for k, v in properties.items()) or "none: call it with {}"
    return "Invalid arguments for `%s`: %s. Valid arguments: %s." % (tool, "; ".join(problems), valid)


class CommandTool:
    """A tool that renders a Template to argv and runs it, as its ToolSpec says."""

    def __init__(self, spec: ToolSpec, runner: ProcessRunner, settings: RunSettings):
        self.spec = spec._replace(description=spec.description or "Run `%s`." % spec.template.display(),
                                  schema=spec.schema or spec.template.input_schema(), ok_exit=tuple(spec.ok_exit))
        self.name, self.schema = spec.name, self.spec.schema  # as every kind of tool has them (ScriptTool)
        self.runner = runner
        self.settings = settings
        self.files = FileArguments(spec.name, spec.files, spec.output_folder, spec.file_resources, settings)

    def question(self, arguments):
        """The elicitation/create params that ask the user for the `asked` parameters `arguments` lacks, or None."""
        asked = self.spec.asked
        missing = [key for key in asked if key not in arguments]
        if not missing:
            return None
        return elicitation_form("; ".join("%s: %s" % (key, asked[key]) for key in missing),
                                {key: dict(self.schema["properties"][key], title=key) for key in missing})

    def definition(self):
        """The MCP Tool object clients list: name, description, inputSchema, annotations."""
        spec = self.spec
        tool = {"name": self.name, "description": spec.description, "inputSchema": self.schema}
        if spec.title:
            tool["title"] = spec.title
        if spec.annotations:
            tool["annotations"] = spec.annotations
        if spec.ok_exit != (0,):
            tool["_meta"] = {OK_EXIT_META: list(spec.ok_exit)}
        if self.settings.task_support != "forbidden":
            tool["execution"] = {"taskSupport": self.settings.task_support}
        return tool

    def argv(self, arguments):
        """The argv a call with these (validated, defaulted) arguments runs."""
        template = self.spec.template
        if self.spec.shell:  # the dash guard, command by command, then the script
            template.render(arguments, self.settings.allow_dash_values, shell=True)
            script, values = template.render_shell(arguments)
            return ["sh", "-c", script, "mcpstudio"] + values
        return template.render(arguments, self.settings.allow_dash_values)

    def confined(self, arguments):
        """Arguments with each declared path (or list of paths) resolved inside its folder."""
        out = dict(arguments)
        for key, folder in self.spec.within.items():
            value = out.get(key)
            if isinstance(value, str):
                out[key] = confine_path(key, value, folder)
            elif isinstance(value, list):
                out[key] = [confine_path(key, v, folder) if isinstance(v, str) else v for v in value]
        return out

    def checked(self, arguments):
        """`arguments` with spellings matched and defaults added, validated; ToolError for arguments that do not fit."""
        arguments = as_text_where_strings(match_spellings(arguments, self.schema["properties"]), self.schema)
        if self.spec.defaults:
            arguments = dict(self.spec.defaults, **arguments)
        problems = validate(arguments, self.schema)
        if problems:
            raise ToolError(_argument_help(self.name, problems, self.schema))
        return arguments

    def prepare(self, arguments):
        """(argv, stdin bytes or None) that checked `arguments` run; ToolError for a value that may not go there."""
        if self.spec.within:
            arguments = self.confined(arguments)
        stdin = self.spec.stdin
        return self.argv(arguments), stdin.render_text(arguments).encode("utf-8") if stdin else None

    def command_line(self, arguments):
        """What a call runs, for the guard (a confirmation's words, a cache key): argv, stdin, cwd, env, and
        this tool's own rules; None when the arguments do not fit (the call says why)."""
        try:
            checked = self.checked(arguments)
            argv, stdin = self.prepare(dict(checked, **self.files.placeholders(checked)))
        except ToolError:
            return None
        return {"argv": argv, "stdin": stdin, "cwd": self.settings.cwd, "env": self.settings.env,
                "rules": [("tool:" + self.name, self.spec.rules)]}

    async def call(self, arguments, ctx: CallContext):
        """Validate `arguments`, run the command, and return an MCP CallToolResult; ToolError for arguments that
        do not fit, or a value that may not go where the template puts it. A call with files in or out runs in
        a private folder of its own (0700), gone after the call: files written before the run, read after it."""
        arguments = self.checked(arguments)
        if not self.files:
            return await self.run(arguments, ctx)
        import shutil
        arguments = await self.files.resolve(arguments, ctx)
        folder = call_folder()
        try:
            result = await self.run(self.files.write(arguments, folder), ctx)
            pid, deadline = ctx.ran and ctx.ran.pid, time.monotonic() + self.runner.grace + 1
            while self.spec.output_folder and pid and _group_alive(pid) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)  # what it left behind still runs (stopped, then killed): its files may change
            return self.files.collect(result, folder, self.settings.budget(ctx))
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    async def run(self, arguments, ctx: CallContext):
        """Render checked `arguments` to argv, run it, and return the CallToolResult."""
        argv, stdin = self.prepare(arguments)
        spec, settings = self.spec, self.settings
        shown = _masked_argv(argv, masked_arguments(arguments, self.schema)[1])  # for debug lines
        if ctx.wants("debug"):
            ctx.log("debug", "running: %s" % _argv_text(shown))
        # its heartbeat also while the call waits for a slot; questions are seen only where the platform tells
        asks = spec.interactive and _reading is not None
        label, secret = "`%s`" % self.name, asks_secrets(re.split(r"[\s;&|()`\"']+", spec.template.display()))
        feed = (PromptWatch(ctx, label, self.name, spec.answers, settings.slots, secret, spec.configured)  # `secret`:
                if asks else OutputFeed(ctx, label, self.name))  # by the words it was written with
        try:
            async with settings.slots:
                result = ctx.ran = await settings.run(self.runner, argv, stdin_bytes=stdin, on_output=feed.add,
                                                      asker=asks and feed, shown=shown)
        finally:
            feed.close()
        if feed.problem:
            raise ToolError(feed.problem)
        if ctx.wants("debug"):
            ctx.log("debug", "`%s` %s in %.3f s" % (spec.template.command_name(),
                    "exited with code %s" % result.returncode if result.status == "exited" else result.status,
                    result.seconds))
        _unstarted_in_task(result, ctx, settings.timeout)
        as_json = spec.output_format == "json"  # its stdout whole: it becomes structuredContent
        outcome = command_result(result, settings.timeout, "mcpstudio://%s/stdout" % self.name, spec.ok_exit,
                                 settings.budget(ctx, whole=as_json))
        return json_result(self.name, result, outcome) if as_json and not outcome["isError"] else outcome


class TemplateTools(Source):
    """A tool source made of CommandTools (template mode has exactly one), fixed at startup."""

    def __init__(self, tools, resources=()):
        self.tools = {tool.name: tool for tool in tools}
        self.command_resources = list(resources)
        self.resources = bool(self.command_resources)

    async def list_tools(self):
        """The MCP Tool objects, under their original names."""
        return [tool.definition() for tool in self.tools.values()]

    def schema_of(self, name):
        """The inputSchema of the tool `name`, or None."""
        tool = self.tools.get(name)
        return tool and tool.schema

    async def call_tool(self, name, arguments, ctx: CallContext):
        """Call the tool named `name`; unknown names are -32602."""
        return await self.tools[name].call(arguments, ctx)

    def question(self, name, arguments):
        """What to ask the user before calling `name` with `arguments` (see CommandTool.question), or None."""
        return self.tools[name].question(arguments)

    def asks(self, name):
        """Whether `name` runs an interactive command (its questions are answered: PromptWatch)."""
        return self.tools[name].spec.interactive

    def command_line(self, name, arguments):
        """What calling `name` with `arguments` runs (see CommandTool.command_line)."""
        return self.tools[name].command_line(arguments)

    async def list_resources(self):
        """The resources with fixed URIs."""
        return [r.definition() for r in self.command_resources if r.pattern is None]

    async def list_resource_templates(self):
        """The resources whose URIs hold fields (RFC 6570 level 1)."""
        return [r.definition() for r in self.command_resources if r.pattern is not None]

    async def read_resource(self, uri, ctx: CallContext):
        """Run the command of the resource that `uri` names; return MCP contents."""
        for resource in self.command_resources:
            values = resource.match(uri)
            if values is not None:
                return await resource.read(uri, values)
        return None


# --------------------------------------------------------------------------
# Sources: a folder of self-describing scripts (mcpd)
# --------------------------------------------------------------------------
# Every executable under the root answers `--help` with its metadata (JSON on
# stdout) and options (JSON on stderr). Discovery is cached by real path,
# size and modification time, in memory and on disk, so unchanged scripts are
# never asked twice, not even across restarts.

SCRIPT_EXIT_MEANINGS = {
    1: "internal error", 2: "bad request (invalid input)", 3: "forbidden", 4: "not found",
    5: "service unavailable", 6: "not acceptable", 7: "not implemented", 8: "conflict", 9: "timeout",
}
SCRIPT_LOG_LEVELS = {"TRACE": "debug", "DEBUG": "debug", "INFO": "info", "WARNING": "warning",
                     "WARN": "warning", "ERROR": "error"}
_SCRIPT_LOG_LINE = re.compile(r"(TRACE|DEBUG|INFO|WARNING|WARN|ERROR)\b[:\s]*(.*)")
_VALUE_TYPES = {"string": "string", "integer": "integer", "float": "number", "number": "number",
                "boolean": "boolean", "any": None}
SCRIPT_DEPTH = 8            # folders below the root that are searched
HELP_CONCURRENCY = 8        # --help runs at once during discovery
CACHE_FORMAT = 1


def user_cache_dir():
    """$XDG_CACHE_HOME/mcpstudio, else the platform's user cache folder."""
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or _cache_base(), "mcpstudio")


def script_schema(options):
    """Translate mcpd options to (JSON schema, defaults); ValueError names the problem.

    Accepts the spec's keys (`required`, `value_type`, `default_value`,
    `size`, `description`) and mcpd's newer `type` and `default`.
    """
    if not isinstance(options, dict):
        raise ValueError("the options on stderr must be a JSON object, not %s" % _type_name(options))
    properties, required, defaults = {}, [], {}
    for name, spec in options.items():
        where = "option `%s`" % name
        if not name or "=" in name or "\0" in name:
            raise ValueError("%s cannot be an environment variable name (MCPD_OPT_...)" % where)
        if not isinstance(spec, dict):
            raise ValueError("%s must be an object" % where)
        if "required" not in spec:  # the spec's key, on every option: say which is missing, not what it must be
            raise ValueError("%s has no `required`: add \"required\": true, or false with a default_value" % where)
        if not isinstance(spec["required"], bool):
            raise ValueError("%s: `required` must be true or false, not %s" % (where, json.dumps(spec["required"])))
        kind = spec.get("value_type", spec.get("type", "any"))
        if isinstance(kind, dict):
            values = kind.get("enum")
            if not isinstance(values, list) or not values:
                raise ValueError("%s: an enum needs a non-empty list of values" % where)
            prop = {"enum": values}
            if all(isinstance(v, str) for v in values):
                prop["type"] = "string"
        elif isinstance(kind, str) and kind in _VALUE_TYPES:
            prop = {"type": _VALUE_TYPES[kind]} if _VALUE_TYPES[kind] else {}
        else:
            raise ValueError("%s: unknown value_type %s (use string, integer, float, boolean, any "
                             "or {\"enum\": [...]})" % (where, json.dumps(kind)))
        size = spec.get("size")
        if size is not None:
            if not isinstance(size, dict) or not all(
                    isinstance(v, NUMBER) and not isinstance(v, bool) for v in size.values()):
                raise ValueError("%s: `size` must be an object of numbers like {\"min\": 1, \"max\": 10}" % where)
            bounds = {"string": ("minLength", "maxLength"), "integer": ("minimum", "maximum"),
                      "number": ("minimum", "maximum")}.get(prop.get("type"))
            prop.update((rule, size[key]) for key, rule in zip(("min", "max"), bounds or ()) if key in size)
        if spec.get("description"):
            prop["description"] = str(spec["description"])
        if "default_value" in spec or "default" in spec:
            default = spec["default_value"] if "default_value" in spec else spec["default"]
            problems = validate(default, prop, "its default %s" % json.dumps(default))
            if problems:
                raise ValueError("%s: %s" % (where, problems[0]))
            prop["default"] = defaults[name] = default
        elif not spec["required"]:
            raise ValueError("%s is optional but has no default_value" % where)
        if spec["required"]:
            required.append(name)
        properties[name] = prop
    return object_schema(properties, required), defaults


def _cache_entry_ok(entry):
    """A discovery cache entry has the shape this version writes (anything else is asked again)."""
    return (isinstance(entry, dict) and isinstance(entry.get("size"), int) and isinstance(entry.get("mtime"), int)
            and (isinstance(entry.get("error"), str)
                 or (isinstance(entry.get("meta"), dict) and isinstance(entry.get("options"), dict))))


def option_variable(name):
    """Whether a script option is also set as a variable of its own name (see above)."""
    return _POSIX and not _steers(name)


def _option_env(value):
    return value if isinstance(value, str) else json.dumps(value)  # true, false, numbers and lists as JSON


class ScriptTool:
    """One discovered script: its schema, and how to call it."""

    def __init__(self, rel, path, name, meta, options):
        self.rel = rel
        self.path = path
        self.name = name
        self.meta = meta
        self.schema, self.defaults = script_schema(options)
        self.state = meta.get("state") is True
        if meta.get("taskSupport", "optional") not in TASK_SUPPORT:
            raise ValueError("`taskSupport` in its --help metadata must be one of %s" % ", ".join(TASK_SUPPORT))

    def argv(self):
        """The words that run the script (a .py on Windows: with a Python)."""
        return _script_argv(self.path) or [self.path]  # no longer executable: the error says so

    @property
    def state_uri(self):
        from urllib.parse import quote
        return "mcpd://%s/state" % quote(self.rel, safe="/")

    def definition(self, task_support="optional"):
        """The MCP Tool; `task_support` unless the script's --help says otherwise."""
        title = self.meta.get("title")
        tool = {
            "name": self.name,
            "title": "%s (%s)" % (title, self.rel) if title else self.rel,
            "description": str(self.meta.get("description") or "Run the script %s." % self.rel),
            "inputSchema": self.schema,
        }
        task_support = self.meta.get("taskSupport", task_support)
        if task_support != "forbidden":
            tool["execution"] = {"taskSupport": task_support}
        return tool


def script_result(tool: ScriptTool, result: ProcessResult, kept, timeout, budget):
    """A CallToolResult for a script run, following the mcpd exit-code table; its text output within `budget`."""
    block = output_content(result.stdout, "mcpd://%s/output" % tool.rel, result.stdout_cut)
    if result.ok and result.stdout_cut and cut_binary(result.stdout, result.stdout_cut):
        return {"content": [block], "isError": True}  # the block says why
    data = None
    if block["type"] == "text" and result.ok:
        try:
            data = json.loads(block["text"])
        except ValueError:
            pass
    if block["type"] == "text" and not isinstance(data, dict):  # JSON keeps its rules
        if not result.ok:
            budget.for_error()
        block = dict(block, text=budget.fit(result.stdout, block["text"], cut=result.stdout_cut))
    links = budget.links
    if result.ok:
        reply = {"content": [block], "isError": False}
        other = [line for line in kept if not line.startswith("ERROR")]
        if other:
            reply["content"].append(text_block("[stderr]\n" + "\n".join(other)))
        if isinstance(data, dict):
            reply["structuredContent"] = data
        if result.stdout_cut:
            reply["content"].append(text_block(limit_note("stdout", result.stdout_cut)))
        reply["content"] += links
        return reply
    code = result.returncode
    if result.status == "exited" and code and code > 0:
        meaning = SCRIPT_EXIT_MEANINGS.get(code, "an exit code the script spec does not define")
        headline = "Script %s failed with exit code %d: %s." % (tool.rel, code, meaning)
    else:
        headline = describe_failure(result, timeout, "Script %s" % tool.rel)
    content = [text_block(headline)]
    if result.stdout:
        content.append(block)
    if kept:
        content.append(text_block("[stderr]\n" + "\n".join(kept)))
    return {"content": content + links, "isError": True}


class ScriptDirectory(Source):
    """Every executable under a root folder, as tools (and `--state` resources)."""

    dynamic = True
    resources = True  # declared from the kind of source, never from what was found

    def __init__(self, root, runner: ProcessRunner, settings: RunSettings, log: Log, *,
                 include=(), exclude=(), separator="__", cache_dir=None,
                 rescan=RESCAN_INTERVAL, help_timeout=HELP_TIMEOUT):
        self.root = os.path.realpath(root)
        self.runner = runner
        self.settings = settings
        self.log = log
        self.include = list(include)
        self.exclude = list(exclude)
        self.separator = separator
        self.rescan_interval = rescan
        self.help_timeout = help_timeout
        self.cache_path = os.path.join(cache_dir or user_cache_dir(), "scripts-%s.json" % _hash(self.root))
        self.tools = {}        # name -> ScriptTool
        self._known = {}       # real path -> {"size", "mtime", "meta", "options"} or {..., "error"}
        self._warned = set()
        self._asked = set()    # real paths whose --help ran in this process
        self._lock = None
        self._ready = None
        self._watcher = None

    # -- discovery ------------------------------------------------------------

    def start(self, events):
        """Begin discovery in the background: `initialize` never waits for it."""
        self.events = events
        self._lock = asyncio.Lock()
        self._known = self._load_cache()
        self._ready = asyncio.ensure_future(self._safe_rescan(first=True))
        if self.rescan_interval > 0:
            self._watcher = asyncio.ensure_future(self._watch())

    async def _watch(self):
        await asyncio.wait([self._ready])
        while True:
            await asyncio.sleep(self.rescan_interval)
            await self._safe_rescan()

    async def _safe_rescan(self, first=False):
        try:
            await self.rescan(first)
        except Exception as exc:  # a failed look never stops the server
            self.log.error("scripts in %s: discovery failed: %r", self.root, exc)

    def _walk(self):
        """rel path -> (real path, size, mtime) for every candidate script."""
        found = {}
        for folder, dirs, files in os.walk(self.root):
            rel_folder = os.path.relpath(folder, self.root)
            depth = 0 if rel_folder == "." else rel_folder.count(os.sep) + 1
            dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < SCRIPT_DEPTH else []
            for name in sorted(files):
                if name.startswith("."):
                    continue
                path = os.path.join(folder, name)
                rel = name if depth == 0 else "/".join(rel_folder.split(os.sep) + [name])
                try:
                    rel.encode("utf-8")
                except UnicodeEncodeError:  # bytes that are not UTF-8, held as lone surrogates
                    self.log.warn_once("script %s left out: its name is not valid UTF-8, which tool names must be; "
                                       "rename it", ascii(os.fsencode(path))[2:-1])
                    continue
                if self.include and not _match(rel, self.include):
                    continue
                if _match(rel, self.exclude):
                    continue
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode) or not _script_argv(path):
                    self.log.debug("scripts: %s skipped (not an executable file)", rel)
                    continue
                found[rel] = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
        return found

    async def rescan(self, first=False):
        """Look for added, changed and removed scripts; True (and an event) if the set changed."""
        async with self._lock:
            found = await asyncio.get_running_loop().run_in_executor(None, self._walk)  # big trees: off the loop
            stale = [(rel, info) for rel, info in found.items() if not self._fresh(info)]
            if stale:
                slots = asyncio.Semaphore(HELP_CONCURRENCY)
                progress = TerminalProgress("asked scripts for --help:", len(stale))

                async def describe(rel, info):
                    async with slots:
                        self._known[info[0]] = await self._describe(info)
                        progress.step(rel)
                await asyncio.gather(*(describe(rel, info) for rel, info in stale))
                progress.finish()
            live = {info[0] for info in found.values()}
            removed = [path for path in self._known if path not in live]
            for path in removed:
                del self._known[path]
            if stale or removed:
                self._save_cache()
            before = self.tools
            self.tools = self._build(found)
            changed = list(before.values()) != list(self.tools.values())  # a tool is kept while its script is
        if changed and not first and self.events:
            self.events.source_changed(self)
        return changed

    def _fresh(self, info):
        entry = self._known.get(info[0])
        return bool(entry) and entry.get("size") == info[1] and entry.get("mtime") == info[2]

    def _names(self, rels):
        """rel path -> tool name. The path's parts joined by the separator, extensions
        dropped; scripts that would share a name (a.sh, a.py) all get a hash of their
        path instead, so a name never moves from one script to another."""
        wanted = {rel: safe_name(self.separator.join(os.path.splitext(p)[0] or p for p in rel.split("/")), 1000)
                  for rel in rels}
        counts = collections.Counter(wanted.values())
        return {rel: name if counts[name] == 1 else "%s_%s" % (name, _hash(rel, 6))
                for rel, name in wanted.items()}

    def _build(self, found):
        tools = {}
        old = {t.rel: t for t in self.tools.values()}
        names = self._names(found)
        for rel, (path, _size, mtime) in sorted(found.items()):
            entry = self._known[path]
            problem = entry.get("error")
            if problem is None:
                previous = old.get(rel)
                name = names[rel]
                if (previous and previous.path == path and previous.meta is entry["meta"]
                        and previous.name == name):
                    tool = previous
                else:
                    try:
                        tool = ScriptTool(rel, path, name, entry["meta"], entry["options"])
                    except ValueError as exc:
                        problem = str(exc)
            if problem is not None:
                key = (rel, mtime, problem)
                if key not in self._warned:
                    self._warned.add(key)
                    message = "script %s left out: %s" % (os.path.join(self.root, rel), problem)
                    if path not in self._asked:
                        message += " (remembered from an earlier run: change or touch the script to ask again)"
                    self.log.warning("%s", message)
                    if self.events:
                        self.events.source_log("warning", message, meta={ON_STDERR_META: True})
                continue
            tools[tool.name] = tool
        return tools

    async def _describe(self, info):
        """Run `script --help` and keep what it says (or what went wrong)."""
        path, size, mtime = info
        entry = {"size": size, "mtime": mtime}
        self._asked.add(path)
        result = await self.settings.run(self.runner, (_script_argv(path) or [path]) + ["--help"], timeout=self.help_timeout,
                                         output_limit=1 << 20)
        if not result.ok:
            tail = _decoded(result.stderr).strip()[-300:]
            entry["error"] = describe_failure(result, self.help_timeout, "`--help`") + ((" " + tail) if tail else "")
            if result.status != "exited" or (result.returncode or 0) < 0:
                entry["transient"] = True  # a timeout or signal: asked again after a restart
            return entry
        try:
            meta = json.loads(command_text(result.stdout) or "{}")
            if not isinstance(meta, dict):
                raise ValueError("expected a JSON object")
        except ValueError as exc:
            entry["error"] = ("`--help` printed invalid metadata on stdout (%s): stdout must hold one JSON "
                              "object; the options go to stderr (>&2)" % exc)
            return entry
        try:
            text = command_text(result.stderr).strip()
            options = json.loads(text) if text else {}
            script_schema(options)
        except ValueError as exc:
            entry["error"] = ("`--help` printed invalid options on stderr (%s): stderr must hold one JSON "
                              "object of options, or nothing" % exc)
            return entry
        entry["meta"], entry["options"] = meta, options
        return entry

    def _load_cache(self):
        try:
            with open(self.cache_path, encoding="utf-8") as f:
                data = json.load(f)
            if data.get("format") == CACHE_FORMAT and data.get("root") == self.root:
                return {path: entry for path, entry in data["scripts"].items() if _cache_entry_ok(entry)}
        except (OSError, ValueError, KeyError, AttributeError, TypeError):
            pass
        return {}

    def _save_cache(self):
        try:
            write_private_json(self.cache_path, {"format": CACHE_FORMAT, "root": self.root, "scripts": {
                path: entry for path, entry in self._known.items() if not entry.get("transient")}})
        except OSError as exc:
            self.log.debug("cannot write the discovery cache %s: %s", self.cache_path, exc)

    async def _current(self):
        await asyncio.wait([self._ready])
        return self.tools

    # -- the source contract ------------------------------------------------------

    async def list_tools(self):
        """The scripts' tools, from the last scan (the first call waits for it)."""
        if self._ready.done():
            await self._safe_rescan()  # cheap: a walk, and --help only for what changed
        return [tool.definition(self.settings.task_support) for tool in (await self._current()).values()]

    def schema_of(self, name):
        """The inputSchema of the script tool `name` of the last scan, or None."""
        tool = self.tools.get(name)
        return tool and tool.schema

    async def call_tool(self, name, arguments, ctx: CallContext):
        """Run the script behind `name` with its options in env, argv and stdin."""
        tool = (await self._current()).get(name)
        if not tool:
            raise ToolError("The script behind `%s` is gone; list the tools again." % name)
        values = dict(tool.defaults, **match_spellings(arguments, tool.schema["properties"]))
        problems = validate(values, tool.schema)
        if problems:
            raise ToolError(_argument_help(name, problems, tool.schema))
        texts = {key: _option_env(value) for key, value in values.items()}
        for key, text in texts.items():  # a batch script expands %MCPD_OPT_x% as shell code
            problem = batch_problem(tool.path, text)
            if problem:
                raise ToolError("`%s` %s; pass it another way, or use a script that is not a batch file" % (key, problem))
        env = dict(self.settings.env or os.environ)
        chosen = {k for k, v in (self.settings.env or {}).items() if os.environ.get(k) != v}  # --env, environment
        for key, text in texts.items():
            env["MCPD_OPT_" + key] = text
            env.setdefault("MCPD_OPT_" + re.sub(r"[^A-Za-z0-9_]", "_", key), text)  # a spelling every shell reads too
            if option_variable(key) and key not in chosen:  # and under its own name, as mcpd passes it: $name
                env[key] = text
        kept = []  # stderr lines that are not log lines, and ERROR lines: the error text

        def stderr_line(line):
            match = _SCRIPT_LOG_LINE.match(line)
            if match:
                level = SCRIPT_LOG_LEVELS[match.group(1)]
                ctx.log(level, match.group(2), logger=name)
                self.log.debug("%s: %s", tool.rel, line)
                if level != "error":
                    return
            kept.append(line)
        feed = OutputFeed(ctx, tool.rel, name, streams=(1,))  # stderr lines are log lines already
        try:
            async with self.settings.slots:
                result = ctx.ran = await self.settings.run(
                    self.runner, tool.argv(), stdin_bytes=json.dumps(values).encode("utf-8"), env=env,
                    on_stderr_line=stderr_line, on_output=feed.add)
        finally:
            feed.close()
        _unstarted_in_task(result, ctx, self.settings.timeout)
        return script_result(tool, result, kept, self.settings.timeout, self.settings.budget(ctx))

    async def list_resources(self):
        """The `--state` resources of scripts that declare one."""
        return [{"uri": t.state_uri, "name": "%s state" % t.rel, "mimeType": "application/json",
                 "description": "Current state of the script %s (its --state output)." % t.rel}
                for t in (await self._current()).values() if t.state]

    async def read_resource(self, uri, ctx: CallContext):
        """Run the script's `--state` and return its output."""
        from urllib.parse import unquote
        tool = next((t for t in (await self._current()).values()
                     if t.state and unquote(t.state_uri) == unquote(uri)), None)
        if not tool:
            return None
        result = await self.settings.run(self.runner, tool.argv() + ["--state"], timeout=self.help_timeout)
        check_read(uri, result, self.help_timeout, "`%s --state`" % tool.rel)
        text = _output_text(result.stdout, 0) or _decoded(result.stdout)
        try:
            json.loads(text)
        except ValueError:
            text = json.dumps(text.rstrip("\n"))
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": text}]}

    async def close(self):
        """Stop rescanning."""
        for task in (self._watcher, self._ready):
            if task and not task.done():
                task.cancel()


# --------------------------------------------------------------------------
# Sources: folders of Agent Skills (the io.modelcontextprotocol/skills extension)
# --------------------------------------------------------------------------
# A skill is any folder under a root that holds a SKILL.md (dot-folders are
# skipped); its path under the root is its skill path, whose last segment must
# be the frontmatter's `name`. Every file of a skill, a nested skill's included,
# is the resource skill://<skill-path>/<file-path>. A listing walks the folders
# again and hashes only files whose stat changed since the last look, so a
# digest always matches what a read returns now. Only files a listing would
# name are ever read: no dot-files, no symlink out of the root.

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
SKILL_MAX_FILES = 512           # the extension's limits per skill
SKILL_MAX_BYTES = 16 << 20
SKILLS_TTL_MS = 60000           # how long a client may keep a listing (edits are seen at once here)
DIRECTORY_MIME = "inode/directory"
_SKILL_NAME = r"(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?"  # the Agent Skills naming rules


def _inside(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _read_inside(path, root, scanned):
    """The bytes (SKILL_MAX_BYTES at most) of the regular file `scanned` (a stat) at `path`, whose real path
    is inside `root`. POSIX: opened one path component at a time, following no symlink, so that a file or
    folder swapped for a symlink after the scan fails to open; a FIFO is opened without waiting for a writer."""
    real = os.path.realpath(path)
    if not _inside(real, root):
        raise OSError("its real path %s is outside %s" % (real, root))
    if _POSIX:
        fd = os.open(root, os.O_RDONLY)
        for part in os.path.relpath(real, root).split(os.sep):
            try:
                fd_next = os.open(part, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
            finally:
                os.close(fd)
            fd = fd_next
    else:
        fd = os.open(real, os.O_RDONLY | os.O_BINARY)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (scanned.st_dev, scanned.st_ino):
            raise OSError("not a regular file, or not the file scanned (it changed meanwhile)")
        data = f.read(SKILL_MAX_BYTES + 1)
    if len(data) > SKILL_MAX_BYTES:
        raise OSError("larger than %d bytes" % SKILL_MAX_BYTES)
    return data


def _uri_path(path):
    """A `/`-separated path as URI path segments (percent-encoded where it must be)."""
    from urllib.parse import quote
    return quote(path, safe="/!$&'()*+,;=:@~")


def skill_file_content(uri, data):
    """One file as `resources/read` contents: text when it is UTF-8 text, else a base64 blob."""
    mime = _file_mime(uri.rsplit("/", 1)[-1])
    text = None if b"\0" in data or mime.startswith(("image/", "audio/", "video/", "font/")) else _as_text(data, False)
    if text is not None:
        return {"uri": uri, "mimeType": "text/plain" if mime == "application/octet-stream" else mime, "text": text}
    return {"uri": uri, "mimeType": mime, "blob": base64.b64encode(data).decode("ascii")}


def skill_uri_segments(uri):
    """The decoded path segments of a skill:// URI; -32602 for traversal, dot-files or encoded separators."""
    from urllib.parse import unquote
    segments = [unquote(s) for s in uri[len("skill://"):].split("/")] if uri.startswith("skill://") else [""]
    if "?" in uri or "#" in uri or any(not s or s.startswith(".") or set(s) & set("/\\\0") for s in segments):
        raise _invalid_params("%s is not a skill file or folder this server serves "
                              "(no empty, `.` or `..` segments, dot-files or encoded separators)" % uri, {"uri": uri})
    return segments


def _no_skill(uri, why=""):
    return _invalid_params("no skill is served at %s%s" % (uri, why), {"uri": uri})


class SkillFolders(Source):
    """Agent Skills under root folders: `skills/list`, `skills/get`, their files as resources, each skill a prompt."""

    resources = True
    skills = skill_methods = True

    def __init__(self, roots, log: Log, prompts=True):
        self.roots = [os.path.realpath(root) for root in roots]
        self.log = log
        self.prompts = prompts
        self.found = {}       # skill path -> (root, folder, frontmatter, files), of the last look
        self.problems = {}    # SKILL.md path -> why that skill is not served, of the last look
        self._headers = {}    # SKILL.md path -> (stat key, frontmatter or a FrontmatterError)
        self._digests = {}    # file path -> (stat key, digest, size)
        self._lock = threading.Lock()

    def start(self, events):
        """Look once in the background, so that bad skills are named on stderr at start."""
        self.events = events
        self._looking = asyncio.ensure_future(self._in_thread(self.look))

    @staticmethod
    async def _in_thread(function, *args):
        return await asyncio.get_running_loop().run_in_executor(None, function, *args)

    # -- the folders ------------------------------------------------------------

    def look(self, announce=True):
        """Walk every root: the skills it serves (self.found) and the skills it refuses (self.problems), each
        refusal named on stderr once (unless not `announce`: `check` prints them itself)."""
        with self._lock:  # one look at a time: the start's and a first listing's may overlap
            return self._look(announce)

    def _look(self, announce):
        found, problems = {}, {}
        for root in self.roots:
            base = os.path.dirname(root) if os.path.isfile(os.path.join(root, "SKILL.md")) else root
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                if "SKILL.md" not in files:
                    continue
                path = "/".join(os.path.relpath(folder, base).split(os.sep))
                skill_md = os.path.join(folder, "SKILL.md")
                if path in found:
                    problems[skill_md] = ("the skill path %s is served from %s already; rename one of the folders"
                                          % (path, found[path][1]))
                    continue
                checked = self.check(path, root, folder)
                if isinstance(checked, str):
                    problems[skill_md] = checked
                else:
                    found[path] = checked
        for skill_md, problem in problems.items():
            if announce and self.problems.get(skill_md) != problem:
                self.log.error("skills: %s: %s; this skill is not served", skill_md, problem)
        self.found, self.problems = found, problems
        return found

    def check(self, path, root, folder):
        """(root, folder, frontmatter, files) of a skill that keeps the rules, else why it does not."""
        skill_md = os.path.join(folder, "SKILL.md")
        try:
            st = os.stat(skill_md)
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
            cached = self._headers.get(skill_md)
            if not cached or cached[0] != key:
                text = _read_inside(skill_md, root, st).decode("utf-8")
                try:
                    cached = (key, parse_frontmatter(text))
                except Exception as exc:  # any parser failure refuses this skill alone
                    cached = (key, exc if isinstance(exc, FrontmatterError) else FrontmatterError(
                        "cannot be read (%s: %s)" % (type(exc).__name__, exc)))
                self._headers[skill_md] = cached
        except (OSError, UnicodeDecodeError) as exc:
            return "cannot read it (%s); make it a readable UTF-8 file" % exc
        header = cached[1]
        if isinstance(header, FrontmatterError):
            return "frontmatter %s; write it in the YAML subset docs/skills.md shows" % header
        name, description = header.get("name"), header.get("description")
        last = path.rsplit("/", 1)[-1]
        if name is None:
            return "the frontmatter gives no `name` (it has none, or an empty one); write `name: %s` (the name of its " \
                "folder)" % last
        if not isinstance(name, str) or not re.fullmatch(_SKILL_NAME, name):
            return ("`name` %s breaks the Agent Skills naming rules (1-64 lowercase letters, digits and single "
                    "hyphens, none at either end); give the skill and its folder such a name" % json.dumps(name))
        if name != last:
            return "`name` %s differs from its folder `%s`; make them the same" % (json.dumps(name), last)
        if description is None:
            return ("the frontmatter gives no `description` (it has none, or an empty one); write one (1 to 1024 "
                    "characters) that says what the skill does and when to use it")
        if not isinstance(description, str) or not 0 < len(description) <= 1024:
            return "`description` must be text of 1 to 1024 characters; say what the skill does and when to use it"
        files = self.files(folder, root)
        size = sum(st.st_size for _, st in files.values())
        if len(files) > SKILL_MAX_FILES or size > SKILL_MAX_BYTES:
            return ("%d files of %d bytes in all, past the limits of %d files and %d bytes a skill may have; "
                    "split it or move the large files out" % (len(files), size, SKILL_MAX_FILES, SKILL_MAX_BYTES))
        return root, folder, header, files

    def files(self, folder, root):
        """file path under `folder` -> (real path, stat), sorted: SKILL.md first, no dot-files,
        no folder behind a symlink, no file whose symlink leaves the root."""
        out, pending = {}, [(folder, "")]
        while pending:
            here, prefix = pending.pop()
            try:
                entries = list(os.scandir(here))
            except OSError:
                continue
            for entry in entries:
                try:
                    if entry.name.startswith("."):
                        continue
                    if entry.is_symlink():
                        real = os.path.realpath(entry.path)
                        st = os.stat(real)
                        if not _inside(real, root):
                            continue
                    elif entry.is_dir():
                        pending.append((entry.path, prefix + entry.name + "/"))
                        continue
                    else:  # not entry.stat(): on Windows its st_ino and st_dev are 0, never the file _read_inside opens
                        real, st = entry.path, os.stat(entry.path)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    out[prefix + entry.name] = (real, st)
        return dict(sorted(out.items(), key=lambda item: (item[0] != "SKILL.md", item[0])))

    def digest(self, real, st, root):
        """("sha256:<hex>", size) of a file, hashed again when its stat changed."""
        key = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
        cached = self._digests.get(real)
        if not cached or cached[0] != key:
            import hashlib
            data = _read_inside(real, root, st)
            cached = self._digests[real] = (key, "sha256:" + hashlib.sha256(data).hexdigest(), len(data))
        return cached[1:]

    def entry(self, path):
        """The extension's Skill entry of a found skill: frontmatter verbatim, every file with digest and size."""
        root, _, frontmatter, files = self.found[path]
        prefix = "skill://%s/" % _uri_path(path)
        resources = []
        for rel, (real, st) in files.items():
            try:
                digest, size = self.digest(real, st, root)
            except OSError:
                continue  # changed since the scan, or swapped for a symlink: the next listing has it as it is
            resources.append({"uri": prefix + _uri_path(rel), "digest": digest, "size": size})
        return {"uri": prefix + "SKILL.md", "frontmatter": frontmatter, "resources": resources}

    def target(self, uri, again=True):
        """(skill path, file path) that a skill:// URI names; -32602 for anything a listing would not name."""
        segments = skill_uri_segments(uri)
        for cut in range(len(segments), 0, -1):
            path = "/".join(segments[:cut])
            if path in self.found:
                checked = self.check(path, *self.found[path][:2])  # the skill as it is now
                if isinstance(checked, str):
                    break
                self.found[path] = checked
                return path, "/".join(segments[cut:])
        if again:
            self.look()
            return self.target(uri, False)
        raise _no_skill(uri)

    # -- the source contract --------------------------------------------------

    async def list_skills(self):
        """Every skill's entry (`skills/list`), in skill path order."""
        def listing():
            return [self.entry(path) for path in sorted(self.look())]
        return await self._in_thread(listing)

    async def get_skill(self, uri):
        """The entry of the skill whose SKILL.md is `uri` (`skills/get`); None for a URI not under skill://."""
        if not uri.startswith("skill://"):
            return None
        path, rel = await self._in_thread(self.target, uri)
        if rel != "SKILL.md":
            raise _no_skill(uri, " (a skill's URI is its SKILL.md's)")
        return await self._in_thread(self.entry, path)

    async def list_resources(self):
        """Every served file once (a nested skill's files belong to the enclosing skill too)."""
        def listing():
            out = {}
            for path, (_, _, frontmatter, files) in sorted(self.look().items()):
                for rel, (_, st) in files.items():
                    uri = "skill://%s/%s" % (_uri_path(path), _uri_path(rel))
                    if rel == "SKILL.md":
                        out[uri] = {"uri": uri, "name": frontmatter["name"], "description": frontmatter["description"],
                                    "mimeType": "text/markdown", "size": st.st_size}
                    elif uri not in out:
                        out[uri] = {"uri": uri, "name": "%s/%s" % (path, rel), "mimeType": _file_mime(rel),
                                    "size": st.st_size}
            return list(out.values())
        return await self._in_thread(listing)

    async def read_resource(self, uri, ctx):
        """A served file's bytes as contents; None for a URI not under skill://, -32602 for any other."""
        if not uri.startswith("skill://"):
            return None

        def read():
            path, rel = self.target(uri)
            files = self.found[path][3]
            if rel not in files:
                raise _invalid_params("%s is not a file of the skill %s" % (uri, path), {"uri": uri})
            try:
                content = skill_file_content(uri, _read_inside(files[rel][0], self.found[path][0], files[rel][1]))
            except OSError as exc:
                raise _invalid_params("cannot read %s (%s)" % (uri, exc), {"uri": uri})
            if rel == "SKILL.md":
                frontmatter = self.found[path][2]
                content.update(name=frontmatter["name"], description=frontmatter["description"])
            return {"contents": [content]}
        return await self._in_thread(read)

    async def read_directory(self, uri):
        """A skill folder's direct children (`resources/directory/read`); None for a URI not under skill://."""
        if not uri.startswith("skill://"):
            return None

        def children():
            path, rel = self.target(uri)
            files, out = self.found[path][3], {}
            prefix = rel + "/" if rel else ""
            for name, (_, st) in files.items():
                if name.startswith(prefix):
                    child = name[len(prefix):].split("/", 1)
                    child_uri = "%s/%s" % (uri, _uri_path(child[0]))
                    out[child_uri] = ({"uri": child_uri, "name": child[0], "mimeType": DIRECTORY_MIME} if len(child) > 1
                                      else {"uri": child_uri, "name": child[0], "mimeType": _file_mime(name),
                                            "size": st.st_size})
            if not out:
                raise _invalid_params("%s is not a directory resource" % uri, {"uri": uri})
            return list(out.values())
        return await self._in_thread(children)

    async def list_prompts(self):
        """Each skill as a prompt (for clients without the extension: Claude Code shows them as slash commands)."""
        found = await self._in_thread(self.look)
        return [{"name": path, "title": found[path][2]["name"], "description": found[path][2]["description"]}
                for path in sorted(found)]

    async def get_prompt(self, name, arguments, ctx):
        """The skill's SKILL.md, and where its files are."""
        uri = "skill://%s/SKILL.md" % _uri_path(name)
        text = (await self.read_resource(uri, ctx))["contents"][0].get("text", "")
        files = "\n".join("- " + r["uri"] for r in (await self.get_skill(uri))["resources"])
        text += ("\n\n---\nThis is the skill `%s`, served by mcpstudio as %s. Its files are MCP resources of this "
                 "server (read them with resources/read); relative paths above resolve against skill://%s/:\n%s\n"
                 % (name.rsplit("/", 1)[-1], uri, _uri_path(name), files))
        return {"description": self.found[name][2]["description"],
                "messages": [{"role": "user", "content": text_block(text)}]}


# --------------------------------------------------------------------------
# Catalog: public names, routing table, pagination
# --------------------------------------------------------------------------

class Catalog:
    """Every source's tools and resources under one list of client-safe names."""

    def __init__(self, sources, max_name_length=DEFAULT_MAX_NAME_LENGTH):
        self.sources = list(sources)
        self.max_name_length = max_name_length
        self.events = None
        self._routes = {}     # public name -> (source, original name), from the last listing
        self.stale = True     # no listing yet, or a source changed (a reload, a server's list_changed): list again
        self._resources = {}  # uri -> source
        self._prompts = {}    # public prompt name -> (source, original name)
        self.listed = {}      # public name -> its Tool (the guard reads its annotations and secret parameters)

    @property
    def dynamic(self):
        """Whether any source's tool set can change while serving (list_changed)."""
        return any(s.dynamic for s in self.sources)

    def changed(self):
        """A source's tools changed (a reload, a server's list_changed): the next route or listing lists again."""
        self.stale = True

    def serves(self, feature):
        """Whether any source has `feature`: "resources", "prompts", "completions" (upstreams may complete
        arguments), "subscribable" (passes resource subscriptions on) or "skills" (the skills extension)."""
        return any(getattr(s, feature) for s in self.sources)  # each a Source flag: False unless a source has it

    @property
    def refusal(self):
        """An McpError every request is answered with (a config that cannot serve), or None."""
        return next((s.refusal for s in self.sources if s.refusal), None)

    def reload_signal(self):
        """What SIGHUP should call (a source that re-reads its config), or None to stop on it."""
        return next((s.reload_signal for s in self.sources if s.reload_signal), None)

    def schema_of(self, name):
        """The inputSchema of a fixed tool called `name` before any listing (its name as its source has it), or None."""
        return next((schema for schema in (s.schema_of(name) for s in self.sources) if schema is not None), None)

    def session_started(self, session=None):
        """`initialize` was answered (by `session`, in the handshake era): sources may begin what waits
        for a client (eager starts)."""
        for source in self.sources:
            source.session_started(session)

    def start(self, events):
        """Begin each source's background work; changes are reported to `events`."""
        self.events = events
        for source in self.sources:
            source.start(events)

    def _publish(self, source, items, routes, out):
        """Give each item a client-safe public name, distinct from those in `routes`."""
        for item in items:
            public = safe_name(item["name"], self.max_name_length, routes)
            routes[public] = (source, item["name"])
            out.append(dict(item, name=public) if public != item["name"] else item)

    async def tools(self):
        """Every source's tools under public names (built once, rebuilt after a change)."""
        tools, routes = [], {}
        self.stale = False
        for source in self.sources:
            self._publish(source, await source.list_tools(), routes, tools)
        self._routes, self.listing = routes, tools
        self.listed = {tool["name"]: tool for tool in tools}
        return tools

    async def tool(self, public):
        """The listed tool `public` (its schema), or None (the call itself then says why)."""
        try:
            return self.listed.get(public) if await self.route(public) else None
        except McpError:
            return None

    def hidden(self, public, ctx):
        """Whether the listed tool `public` is not this request's to see or call (a source's `hides`: the manager
        tools of a team gateway, for whom `admins` does not name)."""
        route = self._routes.get(public)
        return bool(route and route[0].hides(route[1], ctx))

    def denial(self, public):
        """Why a source's permission leaves out the tool `public` (None: none does)."""
        for source in self.sources:
            why = source.denied(public)
            if why:
                return why
        return None

    async def route(self, public):
        """(source, original name, task support, public name) for a public tool name, or None; a unique tool
        also answers to its `-`/`_` respelling."""
        if public not in self._routes or self.stale:
            await self.tools()
        if public not in self._routes:  # a server still starting may own it: a call waits, as a listing would not
            for source in self.sources:
                if await source.await_owner(public):
                    await self.tools()
        if public not in self._routes:
            if self.denial(public):  # a denied name never reaches its `-`/`_` twin
                return None
            # `git_status` (the name template mode once gave) reaches `git-status`, if that is the only match
            loose = [name for name in self._routes if name.replace("-", "_") == public.replace("-", "_")]
            if len(loose) != 1:
                return None
            public = loose[0]
        return self._routes[public] + ((self.listed[public].get("execution") or {}).get("taskSupport", "forbidden"),
                                       public)

    async def resources(self):
        """Every source's resources, in source order."""
        listing, owners = [], {}
        for source in self.sources:
            if source.resources:
                for resource in await source.list_resources():
                    owners[resource["uri"]] = source
                    listing.append(resource)
        self._resources = owners
        return listing

    async def resource_templates(self):
        """Every source's resource templates, in source order."""
        listing = []
        for source in self.sources:
            if source.resources:
                listing.extend(await source.list_resource_templates())
        return listing

    async def read_resource(self, uri, ctx):
        """Ask the source that holds `uri` to read it; -32002 when none does."""
        if uri not in self._resources and not uri.startswith(("skill://", OUTPUT_URI)):  # their sources know
            await self.resources()
        source = self._resources.get(uri)
        candidates = [source] if source else [s for s in self.sources if s.resources]
        for candidate in candidates:  # a URI no listing named may match a template
            result = await candidate.read_resource(uri, ctx)
            if result is not None:
                return result
        raise McpError(RESOURCE_NOT_FOUND, "Resource not found: %s" % uri, {"uri": uri})

    async def skills(self):
        """Every source's skill entries, in source order."""
        listing = []
        for source in self.sources:  # an aggregator may learn of its servers' skills by listing
            listing.extend(await source.list_skills())
        return listing

    async def skill_answer(self, method, uri):
        """`get_skill` or `read_directory` of the first skills source that serves `uri`; -32602 when none does."""
        for source in self.sources:
            result = await getattr(source, method)(uri)  # every Source has both
            if result is not None:
                return result
        raise _no_skill(uri)

    async def prompts(self):
        """Every source's prompts under public names."""
        listing, routes = [], {}
        for source in self.sources:
            if source.prompts:
                self._publish(source, await source.list_prompts(), routes, listing)
        self._prompts = routes
        return listing

    async def get_prompt(self, public, arguments, ctx):
        """Get a prompt by its public name from the source that holds it."""
        if public not in self._prompts:
            await self.prompts()
        route = self._prompts.get(public)
        if not route:
            raise McpError(INVALID_PARAMS, "Unknown prompt: %s" % public)
        return await route[0].get_prompt(route[1], arguments, ctx)

    async def subscribe(self, method, uri, ctx):
        """`resources/subscribe` or `unsubscribe` passed to the source that holds `uri`; -32002 if none does."""
        for source in self.sources:
            if source.subscribable:
                result = await source.subscribe(method, uri, ctx)
                if result is not None:
                    return result
        raise McpError(RESOURCE_NOT_FOUND, "Resource not found: %s" % uri, {"uri": uri})

    async def complete(self, ref, params, ctx):
        """`completion/complete` from the source that owns `ref`: a prompt by its public name, a
        resource template (or resource) by its URI."""
        if ref.get("type") == "ref/prompt":
            if ref.get("name") not in self._prompts:
                await self.prompts()
            route = self._prompts.get(ref.get("name"))
            owners = [(route[0], dict(ref, name=route[1]))] if route else []
        else:
            owners = [(s, ref) for s in self.sources if s.completions]
        for source, own_ref in owners:
            result = await source.complete(own_ref, params, ctx)
            if result is not None:
                return result
        raise _invalid_params("no prompt or resource template %s to complete"
                              % json.dumps(ref.get("name", ref.get("uri"))))

    async def close(self):
        """Close every source (stops what they started)."""
        for source in self.sources:
            await source.close()


def paginate(items, cursor, page_size=PAGE_SIZE):
    """Return (page, next_cursor) for an opaque cursor; a bad cursor is -32602."""
    start = 0
    if cursor is not None:
        if not isinstance(cursor, str) or not re.fullmatch(r"o[0-9]{1,9}", cursor) or int(cursor[1:]) > len(items):
            raise McpError(INVALID_PARAMS, "Invalid cursor: %r is not a cursor this server gave out" % (cursor,))
        start = int(cursor[1:])
    end = start + page_size
    return items[start:end], ("o%d" % end if end < len(items) else None)


# --------------------------------------------------------------------------
# Tasks: tool calls that outlive their request (both eras)
# --------------------------------------------------------------------------
# 2025-11-25 (experimental): the client asks with `task` on tools/call and gets
# `{"task": Task}`; tasks/get, tasks/result (waits for the end), tasks/list and
# tasks/cancel follow. 2026-07-28 (the io.modelcontextprotocol/tasks extension):
# the server decides; an optional tool still running after TASK_AFTER answers
# with a flat CreateTaskResult, tasks/get inlines the result or error, and
# tasks/cancel acknowledges. A task belongs to the handshake-era session that
# made it; 2026-07-28 requests have no session, so theirs belong to the signed-in
# person (signIn, people), else are shared by every such request (behind the
# same --http token), and are found only by their id, 128 random bits. Output
# is bounded as for any call (--max-output).

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASK_TTL_MS = 3600000          # how long a task is kept after its creation (a client may ask for less)
TASK_MAX_TTL_MS = 86400000     # the most a client may ask for
TASK_KEEP = 60.0               # seconds a result stays readable after it arrives, even past its ttl
TASK_POLL_MS = 1000            # the pollInterval suggested to clients
TASK_LIMIT = 100               # tasks kept at once; the oldest ended one makes room
TASK_SHARE = 2                 # one person (else one session) holds at most 1/TASK_SHARE of them: others keep room
TERMINAL = ("completed", "failed", "cancelled")
_NEEDS_TASKS = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}  # a -32021's data


def _iso(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


INSTANCE_NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")
INSTANCE_VARIABLE = "MCPSTUDIO_INSTANCE"


class Instance:
    """This process's name in the ids of what lives only in it (tasks, HTTP sessions, parked prompt rounds), so a
    load balancer routes by an id's first part without reading bodies: `NAME.RUN.SECRET`. NAME is --http-instance
    (default: random, new at each start), RUN new at each start (tells a restart apart), SECRET 128 random bits."""

    def __init__(self, name=None):
        import secrets
        self.named = bool(name)  # unnamed: a restart takes a new random name, and cannot be told from another instance
        self.name = name or secrets.token_hex(4)
        self.run = secrets.token_hex(3)

    def new_id(self):
        import secrets
        return "%s.%s.%s" % (self.name, self.run, secrets.token_hex(16))

    def elsewhere(self, key):
        """Why `key` (an id this process does not hold) is not here, naming the instance that holds or held it;
        None when it is not an instance's id or this very run made it (then it ended or expired)."""
        parts = key.split(".") if isinstance(key, str) else ()
        if len(parts) != 3 or not INSTANCE_NAME.fullmatch(parts[0]):
            return None
        if parts[0] != self.name and not self.named:
            return ("it was made by instance %s, and this is instance %s, named at random at each start: this server "
                    "restarted since (what the earlier run held is lost), or a load balancer sent it to another instance "
                    "(give each instance its --http-instance NAME and route by it)" % (parts[0], self.name))
        if parts[0] != self.name:
            return ("it is held by instance %s (the first part of its id), and this is instance %s: the load balancer "
                    "must send it by that prefix (Mcp-Name, Mcp-Session-Id), or instance %s is down and it was lost "
                    "with it" % (parts[0], self.name, parts[0]))
        if parts[1] != self.run:
            return "it was lost when instance %s restarted (an earlier run of this instance made it)" % self.name
        return None


class Task:
    """One tool call run as a task: its status, then its result or error."""

    def __init__(self, owner, ttl, modern, task_id=None):
        import secrets
        self.id = task_id or secrets.token_hex(16)
        self.owner = owner      # the handshake-era Session that made it; 2026-07-28: its person's subject, or None
        self.modern = modern
        self.status = "working"
        self.message = None
        self.created = self.updated = time.time()
        self.ttl = ttl
        self.expires = None     # when it may be forgotten (set when it ends)
        self.holder = owner     # whose share of the store it takes: the signed-in person's subject, else the owner
        self.result = self.error = self.job = None
        self.ended = asyncio.Event()

    def end(self, status, result=None, error=None):
        """The terminal status (a cancelled task stays cancelled, whatever its job does next)."""
        if self.status in TERMINAL:
            return
        self.status, self.result, self.error = status, result, error
        if error:
            self.message = error.message
        elif status == "failed":  # 2025-11-25: a tool error fails the task; its text says why
            content = result.get("content") if isinstance(result.get("content"), list) else []
            self.message = next((c.get("text") for c in content if _object(c).get("type") == "text"), None)
        self.updated = time.time()
        self.expires = max(self.created + self.ttl / 1000.0, self.updated + TASK_KEEP)
        self.ended.set()

    def wire(self):
        """The Task object of its era (`ttl`, `pollInterval`; or `ttlMs`, `pollIntervalMs`)."""
        task = {"taskId": self.id, "status": self.status, "createdAt": _iso(self.created),
                "lastUpdatedAt": _iso(self.updated)}
        if self.message:
            task["statusMessage"] = self.message
        task["ttlMs" if self.modern else "ttl"] = self.ttl
        if self.status not in TERMINAL:
            task["pollIntervalMs" if self.modern else "pollInterval"] = TASK_POLL_MS
        return task


class TaskStore:
    """The server's tasks: started from tools/call, read by tasks/*, forgotten after their ttl."""

    ids = None  # the Instance that names its tasks over --http (else plain random ids)

    def __init__(self, limit=TASK_LIMIT, share=TASK_SHARE):
        self.tasks = collections.OrderedDict()  # id -> Task, oldest first
        self.limit = limit
        self.share = share  # one person (else one session) keeps at most 1/share of `limit`

    def identify(self, instance: Instance):
        """Name the tasks started from now on after `instance` (--http: this process's name, for a balancer)."""
        self.ids = instance

    def _sweep(self):
        now = time.time()
        for task in [t for t in self.tasks.values() if t.expires is not None and t.expires <= now]:
            del self.tasks[task.id]
        for task in [t for t in self.tasks.values() if t.expires is None and t.created + t.ttl / 1000.0 <= now]:
            # still running at the end of its ttl: nobody may read it any more
            self.cancel(task, "its ttl of %d ms ran out" % task.ttl)

    def full(self):
        """Whether a new task would find no room (every kept task still running)."""
        self._sweep()
        return len(self.tasks) >= self.limit and all(t.status not in TERMINAL for t in self.tasks.values())

    def start(self, call, ctx: CallContext, ttl, on_end=None) -> Task:
        """Run the coroutine `call` (a tool call with `ctx`) as a new task; one person (else one session) keeps at
        most a 1/share of the store (TASK_SHARE), so that one cannot fill it for everyone."""
        self._sweep()
        owner = ctx.owner
        holder = getattr(ctx.session, "person", None) or owner
        share = max(1, self.limit // self.share)
        mine = [t for t in self.tasks.values() if t.holder == holder]
        if share < self.limit and len(mine) >= share:  # their own oldest ended task makes room
            ended = next((t for t in mine if t.status in TERMINAL), None)
            if not ended:
                call.close()
                raise McpError(INTERNAL_ERROR, "you have %d tasks running or keeping results unread, the most one "
                               "person (or session) may keep (%d, a share of this server's %d), and none of yours "
                               "has ended: wait for one to end, or cancel one (tasks/cancel)"
                               % (len(mine), share, self.limit))
            del self.tasks[ended.id]
        if len(self.tasks) >= self.limit:  # the caller's own oldest ended task makes room, never another's result
            ended = next((t for t in self.tasks.values() if t.status in TERMINAL and t.owner == owner), None)
            if not ended:
                call.close()
                raise McpError(INTERNAL_ERROR, "%d tasks are running or keep results unread, the most this server "
                               "keeps, and none of yours has ended: wait for one to end, or cancel one (tasks/cancel)"
                               % self.limit)
            del self.tasks[ended.id]
        task = Task(owner, ttl, ctx.modern, self.ids and self.ids.new_id())
        task.holder = holder
        ctx.task, ctx.running = task.id, task
        self.tasks[task.id] = task
        task.job = asyncio.ensure_future(self._run(task, call, on_end))
        task.job.add_done_callback(lambda job: call.close())  # a task cancelled before it began never ran it
        return task

    async def _run(self, task: Task, call, on_end):
        try:
            result = await call
        except asyncio.CancelledError:
            task.end("cancelled")
        except Exception as exc:  # the boundary, as in Session._complete
            task.end("failed", error=wire_error(exc))
        else:
            task.end("failed" if result.get("isError") and not task.modern else "completed", result)
        if on_end:
            on_end(task)

    def get(self, task_id, ctx: CallContext) -> Task:
        """The caller's task `task_id`; -32602 when there is none (unknown, expired, someone else's)."""
        self._sweep()
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if not task or task.owner != ctx.owner or task.modern != ctx.modern:
            elsewhere = None if task or not self.ids else self.ids.elsewhere(task_id)
            if elsewhere:
                raise McpError(INVALID_PARAMS, "Task %s is not on this instance: %s" % (json.dumps(task_id), elsewhere),
                               {"taskId": task_id, "instance": self.ids.name})
            raise McpError(INVALID_PARAMS, "Unknown task: %s (tasks are kept for their ttl, %s)" % (
                json.dumps(task_id), "by the server that made them, for the person who made them" if ctx.modern else
                "and only for the session that made them"))
        return task

    def cancel(self, task: Task, why="cancelled by the client"):
        """Stop the task's command (its process group) and mark it cancelled at once, saying `why`."""
        task.job.cancel()
        task.end("cancelled")
        task.message = why

    def owned(self, ctx: CallContext):
        self._sweep()
        return [t for t in self.tasks.values() if t.owner is ctx.session and not t.modern]

    def forget(self, owner):
        """A session ended: its tasks stop and go."""
        for task in [t for t in self.tasks.values() if owner and t.owner is owner]:
            task.job.cancel()
            del self.tasks[task.id]

    async def close(self):
        """Stop every running task (the server is stopping)."""
        jobs = [t.job for t in self.tasks.values() if not t.job.done()]
        for job in jobs:
            job.cancel()
        if jobs:
            await asyncio.wait(jobs, timeout=KILL_GRACE + 2)


# --------------------------------------------------------------------------
# Guard rails: audit log, rate limits, result cache, call metrics
# --------------------------------------------------------------------------
# One step in front of every tool call (Server.tools_call), whatever its source
# (templates, scripts, config tools, an aggregator's servers): rate limit,
# confirmation, cache, run, audit line, counters, in that order. Only the audit
# writer does I/O; the rest are small pure parts with table tests.

AUDIT_MAX_BYTES = 10 << 20      # an audit file's size before it is rotated
AUDIT_KEEP = 5                  # rotated audit files kept (FILE.1 ... FILE.5)
CACHE_ENTRIES = 1000            # results the cache keeps at once
CACHE_BYTES = 32 << 20          # bytes of results it keeps at once
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
CACHED_META = "mcpstudio/cached"


class AuditLog:
    """One JSON line per call, appended with one os.write on an O_APPEND descriptor (whole lines even
    under a SIGKILL), rotated by size into a bounded number of files, mode 0600.

    A file planted where the log goes is never written: on POSIX a symbolic link is not followed
    (O_NOFOLLOW), and a file that is not a regular file of this user with no group or other bits is
    refused, the current one and each rotated one (the calls too, when the audit is `required`)."""

    # Windows has neither O_NOFOLLOW nor O_NONBLOCK (nor owners and modes to check); O_NONBLOCK: a planted FIFO
    # fails to open rather than block the loop
    FLAGS = (os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))

    def __init__(self, path, max_bytes=AUDIT_MAX_BYTES, keep=AUDIT_KEEP, required=False):
        self.path, self.max_bytes, self.keep, self.required = path, max_bytes, keep, required
        self.fd = None

    def open(self):
        """The descriptor, opened on first use (OSError when the file cannot be written, or is not ours)."""
        if self.fd is None:
            try:
                fd = _open_appending(self.path, self.FLAGS, 0o600)
            except OSError as exc:
                if _POSIX and os.path.islink(self.path):
                    raise OSError(exc.errno, "it is a symbolic link (the audit file must be a file of its own)") from None
                raise
            try:
                self.check(os.fstat(fd), self.path)
            except OSError:
                os.close(fd)
                raise
            self.fd = fd
        return self.fd

    @staticmethod
    def check(info, path):
        """Raise OSError unless `info` (a stat result) is a regular file of this user with no group or other bits."""
        if not _POSIX:
            return
        if not stat.S_ISREG(info.st_mode):
            raise OSError("%s is not a regular file" % path)
        if info.st_uid != os.getuid():
            raise OSError("%s belongs to another user (uid %d)" % (path, info.st_uid))
        if info.st_mode & 0o077:
            raise OSError("%s is readable or writable by others (mode %o; chmod 600 it, or remove it)"
                          % (path, info.st_mode & 0o777))

    def ready(self, log: Log):
        """Whether the file can be opened for appending (said on stderr if not)."""
        try:
            return self.open() is not None
        except OSError as exc:
            log.error("audit log %s: cannot open it: %s", self.path, exc)
            return False

    def write(self, entry, log: Log, secrets):
        """Append `entry` (masked by `log`'s secrets and `secrets` too); False, said on stderr, when it could not be
        written."""
        line = (json.dumps(mask_secrets(entry, log.secrets + secrets), ensure_ascii=False, default=str) + "\n").encode(
            "utf-8", "replace")
        try:
            if self.fd is not None and self._moved():  # another process sharing the file rotated it
                self._close()
            if os.fstat(self.open()).st_size + len(line) > self.max_bytes:
                with self._locked():  # one rotation, whichever process sharing the file comes first
                    if not self._moved() and os.fstat(self.fd).st_size + len(line) > self.max_bytes:
                        self._close()
                        for number in range(self.keep, 0, -1):
                            older = "%s.%d" % (self.path, number - 1) if number > 1 else self.path
                            if os.path.lexists(older):
                                self.check(os.lstat(older), older)  # a planted rotated file: nothing is moved
                                os.replace(older, "%s.%d" % (self.path, number))
                    self._close()
            os.write(self.open(), line)
            return True
        except OSError as exc:
            log.error("audit log %s: cannot write: %s", self.path, exc)
            return False

    def _close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _moved(self):
        """Whether the path no longer names the open file (renamed by a rotation, or removed)."""
        try:
            now, mine = os.lstat(self.path), os.fstat(self.fd)
        except OSError:
            return True
        return (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino)

    def _locked(self):
        """A lock the processes sharing this file hold while they rotate it (on its folder; none on Windows)."""
        if not _POSIX:
            return contextlib.nullcontext()

        @contextlib.contextmanager
        def held():
            import fcntl
            fd = None
            try:
                fd = os.open(os.path.dirname(os.path.abspath(self.path)), os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:
                pass  # a folder that cannot be locked: the rotation goes on, as it did before locks
            try:
                yield
            finally:
                if fd is not None:
                    os.close(fd)  # the lock goes with it
        return held()


def take_token(buckets, limits, now):
    """Token buckets (a burst of `calls`, then `calls` per `seconds`): one token from each of `limits`
    [(key, calls, seconds)] at `now`, or none. (0.0, None) when taken, else (seconds to wait, the limit)."""
    levels = []
    for key, calls, seconds in limits:
        tokens, stamp = buckets.get(key, (calls, now))
        levels.append((key, min(calls, tokens + (now - stamp) * calls / seconds), calls, seconds))
    waits = [((1 - tokens) * seconds / calls, (calls, seconds)) for _, tokens, calls, seconds in levels if tokens < 1]
    if waits:
        return max(waits)
    for key, tokens, _, _ in levels:
        buckets.pop(key, None)
        buckets[key] = (tokens - 1, now)
    while len(buckets) > CACHE_ENTRIES * 10:  # the least recently used caller's bucket goes
        del buckets[next(iter(buckets))]
    return 0.0, None


class ResultCache:
    """Successful results by key until they expire; bounded in entries and bytes, oldest out first. Each entry
    has an owner (a server) and that owner's version (its launch and run): a new version drops the old's."""

    def __init__(self, max_entries=CACHE_ENTRIES, max_bytes=CACHE_BYTES):
        self.entries = collections.OrderedDict()  # key -> (result, expires, size, owner)
        self.max_entries, self.max_bytes, self.size = max_entries, max_bytes, 0
        self.versions = {}  # owner -> the version its entries were made by

    def get(self, key, now):
        """(result, expires) of a live entry, or None."""
        entry = self.entries.get(key)
        if entry and entry[1] <= now:
            self.size -= self.entries.pop(key)[2]
            entry = None
        return entry and entry[:2]

    def put(self, key, result, expires, size, owner="", version=""):
        """Keep `result`; the oldest entries make room (one larger than the whole cache is not kept). An
        `owner` seen with another `version` before (restarted, or reloaded to run elsewhere) loses those entries."""
        if self.versions.setdefault(owner, version) != version:
            self.drop(owner)
            self.versions[owner] = version
        if key in self.entries:
            self.size -= self.entries.pop(key)[2]
        if size <= self.max_bytes:
            self.entries[key] = (result, expires, size, owner)
            self.size += size
        while len(self.entries) > self.max_entries or self.size > self.max_bytes:
            self.size -= self.entries.popitem(last=False)[1][2]

    def drop(self, owner):
        """Forget every entry of `owner`."""
        for key in [key for key, entry in self.entries.items() if entry[3] == owner]:
            self.size -= self.entries.pop(key)[2]


class CallMetrics:
    """Per tool since start: calls, errors, rate-limited, cached, and latencies (a histogram and the last
    1,000 for percentiles)."""

    def __init__(self):
        self.counts = collections.defaultdict(collections.Counter)  # tool -> calls, outcomes, latency buckets, sum
        self.recent = collections.defaultdict(lambda: collections.deque(maxlen=1000))

    def count(self, tool, outcome, seconds):
        """One call of `tool` that ended as `outcome` (ok, error, rateLimited, cached, refused)."""
        self.counts[tool].update(["calls", outcome, "+Inf"] + [bound for bound in LATENCY_BUCKETS if seconds <= bound])
        self.counts[tool]["sum"] += seconds
        self.recent[tool].append(seconds)

    def summary(self):
        """Per tool: the counts and the 50th, 90th and 99th latency percentiles in milliseconds."""
        out = {}
        for tool, counts in sorted(self.counts.items()):
            recent = sorted(self.recent[tool])
            out[tool] = dict({key: counts[key] for key in ("calls", "error", "rateLimited", "cached", "refused")}, **{
                "p%dMs" % percent: round(recent[len(recent) * percent // 100] * 1000, 1)
                for percent in (50, 90, 99)})
        return out

    def prometheus(self, gauges):
        """The Prometheus text format: the counters and latency histogram per tool, then `gauges`
        {metric name: [(labels dict, value)]}."""
        lines = []

        def family(name, kind, samples):
            lines.append("# TYPE mcpstudio_%s %s" % (name, kind))
            for suffix, labels, value in samples:
                text = ",".join("%s=%s" % (key, json.dumps(str(label), ensure_ascii=False)) for key, label in labels.items())
                lines.append("mcpstudio_%s%s{%s} %s" % (name, suffix, text, value))
        for name, key in (("calls", "calls"), ("errors", "error"), ("rate_limited", "rateLimited"),
                          ("cached", "cached"), ("refused", "refused")):
            family(name + "_total", "counter", [("", {"tool": tool}, counts[key]) for tool, counts in self.counts.items()])
        samples = []
        for tool, counts in self.counts.items():
            samples += [("_bucket", {"tool": tool, "le": bound}, counts[bound]) for bound in LATENCY_BUCKETS + ("+Inf",)]
            samples += [("_sum", {"tool": tool}, counts["sum"]), ("_count", {"tool": tool}, counts["calls"])]
        family("call_seconds", "histogram", samples)
        for name, values in gauges.items():
            family(name, "gauge", [("", labels, value) for labels, value in values])
        return "\n".join(lines) + "\n"


class RunningStats:
    """A running `serve`'s CallMetrics for `status` and the TUI, other processes: one JSON file a serving
    process in the user's cache folder, written atomically a second after a call (a one-shot timer, none
    while idle) and removed at exit. A file whose process is gone is removed by the reader that finds it."""

    def __init__(self, metrics: CallMetrics, config, transport):
        atexit.register(self.close)
        self.metrics, self.timer = metrics, None
        self.path = os.path.join(user_cache_dir(), "running-%d.json" % os.getpid())
        self.head = {"pid": os.getpid(), "started": _iso(time.time()), "transport": transport,
                     "config": config and os.path.realpath(config)}

    def changed(self):
        """A call was counted: write a second later (once for every call of that second)."""
        if not self.timer:
            self.timer = asyncio.get_running_loop().call_later(1, self.write)

    def write(self):
        self.timer = None
        try:
            write_private_json(self.path, dict(self.head, tools=self.metrics.summary()))
        except OSError:
            pass  # status shows no counters; the call is served all the same

    def close(self):
        try:
            os.unlink(self.path)
        except OSError:
            pass

    @staticmethod
    def running(config):
        """The snapshots of the live serving processes of `config`."""
        import glob
        for path in sorted(glob.glob(os.path.join(user_cache_dir(), "running-*.json"))):
            try:
                with open(path, encoding="utf-8") as f:
                    snapshot = json.load(f)
                if not _process_alive(snapshot["pid"]):
                    os.unlink(path)
                elif snapshot["config"] == os.path.realpath(config):
                    yield snapshot
            except (OSError, ValueError):
                pass  # removed meanwhile

    @staticmethod
    def table(tools):
        """`status`'s lines for a snapshot's `tools` (CallMetrics.summary): a header, then a row a tool."""
        width = max(map(len, ["TOOL", *tools]))
        return ["%-*s  CALLS ERRORS LIMITED CACHED REFUSED  P50 MS  P90 MS  P99 MS" % (width, "TOOL")] + [
            "%-*s %6s %6s %7s %6s %7s %7s %7s %7s" % (width, tool, *counts.values())
            for tool, counts in sorted(tools.items())]


async def tool_result(call):
    """Await a tool call (a coroutine) and answer what it returns; a ToolError on the way (arguments that do not
    fit, a refusal) becomes its `isError` result. The one rule for errors to results: sources raise, and only the
    server applies it (Guard.call, around all it runs; Server.tools_call, for what it refuses itself)."""
    try:
        return await call
    except ToolError as exc:
        result = {"content": [text_block(str(exc))], "isError": True}
        return dict(result, _meta=exc.meta) if exc.meta else result


class Guard:
    """The one policy step every tool call passes: rate limit, confirmation, cache, run, audit, counters.

    `rules` are the file's (and the flags'): "rateLimit" (calls, seconds, scope), "cache" (ttl, shared),
    "confirm" (true or "destructive"); a source's `command_line` adds its server's and tool's."""

    def __init__(self, log: Log, rules=None, audit: AuditLog | None = None, metrics: CallMetrics | None = None,
                 stats: RunningStats | None = None, http_limit=(), open_paths=(), sign_in=None):
        self.log, self.rules, self.audit = log, rules or {}, audit
        self.buckets, self.cache, self.metrics = collections.OrderedDict(), ResultCache(), metrics or CallMetrics()
        self.stats = stats            # RunningStats: `serve` publishes the metrics for `status` and the TUI
        self.http_limit = http_limit  # (calls, seconds) of HTTP requests per caller (--http-rate-limit)
        self.open = open_paths        # "/health", "/metrics": served without the HTTP token (openEndpoints)
        self.sign_in = sign_in        # the config's signIn and people (read_sign_in): serve --http asks for tokens

    async def call(self, public, source, original, arguments, ctx: CallContext, tool, ask):
        """Call `original` of `source` (listed as `public`, `tool` its listing) under the rules that apply to it."""
        annotations = tool.get("annotations") or {}
        plan = source.command_line(original, arguments) or {}
        levels = [("file", self.rules)] + plan.get("rules", [])
        chosen = {key: rules[key] for _, rules in levels for key in rules}
        who = ctx.session.caller or "session-%x" % id(ctx.session)
        entry = {key: plan[key] for key in ("namespace", "server", "upstreamTool", "argv") if key in plan}
        limits = [("%s|%s" % (level, who if rules["rateLimit"][2] == "session" else "*"),) + rules["rateLimit"][:2]
                  for level, rules in levels if "rateLimit" in rules]
        cache = chosen.get("cache") if annotations.get("readOnlyHint") else None
        isolated = plan.get("isolated")  # "user" or "session": the answer of its caller's own process
        shared = cache and cache[1] and not isolated
        mine = "%s|%s-%x" % (who, ctx.session.label, id(ctx.session)) if isolated == "session" and not ctx.modern \
            else who  # a session's own process: its answers are the session's
        # The route, not the public name (one name in two namespaces may reach two servers): the server's id, its
        # version (launch fingerprint and run; None while it is not running) and the tool's own name.
        route = source.cache_route

        def cache_key(owner, version, tool):  # also each namespace's overrides, what they send (a reload may change it)
            return version is not None and json.dumps([owner, version, tool, public, "" if shared else mine,
                                                       plan.get("argv") or arguments, plan.get("stdin"), plan.get("cwd"),
                                                       plan.get("env"), plan.get("namespace"), plan.get("curation")],
                                                      default=str)
        key = cache and cache_key(*route(original))

        def limited(wait, limit):
            entry["rateLimited"] = True
            wait_text = round(wait + 0.05, 1)  # rounded up: a client that waits this long gets in
            return ToolError("Not run: %s allows %d calls per %g s; retry in %.1f s." % (
                (public,) + limit + (wait_text,)), {"mcpstudio/retryAfter": wait_text})

        async def run():
            nonlocal key
            looked = take_token({key: self.buckets[key] for key, _, _ in limits if key in self.buckets}, limits,
                                time.monotonic())  # a look: a token is spent below, by a call that runs
            if looked[0]:
                raise limited(*looked)
            if self.audit and self.audit.required and not self.audit.ready(self.log):
                entry["refused"] = "the audit log cannot be written"
                raise ToolError("Not run: the audit log %s cannot be written, and the config requires it "
                                "(\"audit\": {\"required\": true})." % self.audit.path)
            confirm = chosen.get("confirm")
            asking = (confirm is True or confirm == "destructive" and annotations.get("readOnlyHint") is not True and
                      annotations.get("destructiveHint") is not False) and \
                await self._confirm(public, plan, arguments, ctx, ask, entry,
                                    [level for level, rules in levels if "confirm" in rules][-1])
            if asking:
                return asking
            taken = take_token(self.buckets, limits, time.monotonic())  # not by a 2026-07-28 round that asks
            if taken[0]:  # another call took the last token while this one asked
                raise limited(*taken)
            hit = key and self.cache.get(key, time.monotonic())
            if hit:
                entry["cached"] = True
                return _with_meta(hit[0], CACHED_META, True)
            result = await source.call_tool(original, arguments, ctx)
            where = cache and (ctx.served or route(original))  # after the call: the run that answered it
            key = where and cache_key(*where)
            text = key and not result.get("isError") and not ctx.asked and json.dumps(result, default=str)
            if text and OUTPUT_URI not in text:  # a kept output is read only by its session
                self.cache.put(key, result, time.monotonic() + cache[0], len(text), where[0], where[1])
            return result
        result = await self.record(public, arguments, ctx, entry, tool_result(run()), tool.get("inputSchema"))
        if key in self.cache.entries and ctx.modern and "content" in result and not result.get("isError"):  # SEP-2549
            result = dict(result, ttlMs=int((self.cache.entries[key][1] - time.monotonic()) * 1000),
                          cacheScope="public" if cache[1] else "private")
        return result

    async def _confirm(self, public, plan, arguments, ctx, ask, entry, level):
        """None when the person said yes to running this call, an InputRequiredResult when they are yet to be
        asked (2026-07-28), else a ToolError that says why it did not run (`level`: where the config asks for it:
        "file", "server:ID" or "tool:NAME")."""
        what = "run `%s`" % visible_text(_argv_text(plan["argv"])) if "argv" in plan else "call %s with %s" % (
            "tool %s of server %s" % (plan["tool"], plan["server"]) if "server" in plan else public,
            visible_text(json.dumps(arguments, ensure_ascii=False)))
        if not ctx.declared("elicitation"):
            entry["refused"] = "confirmation required; the client cannot ask"
            raise ToolError("Not run: %s needs the user's confirmation before it may %s, and this client cannot ask "
                            "(it declared no elicitation capability). To run it without asking, set \"confirm\": "
                            "false %s." % (public, what, "at the top of the config, or on this tool's entry or its "
                                           "server's" if level == "file" else "on %s %s in the config"
                                           % tuple(level.split(":", 1))))
        words = "\nThe command, word by word: %s" % visible_text(json.dumps(plan["argv"], ensure_ascii=False, default=str)) \
            if "argv" in plan else ""  # the exact argv, program first
        answer = await ask(elicitation_form("Allow %s to %s?%s" % (public, what, words),
                                            {"run": {"type": "boolean", "title": "Run it"}}))
        if answer.get("resultType") == "input_required":
            return answer
        entry["confirmed"] = answer.get("action") == "accept" and (answer.get("content") or {}).get("run") is True
        if not entry["confirmed"]:
            entry["refused"] = "not confirmed"
            raise ToolError("Not run: the user did not confirm that %s may %s." % (public, what))
        return None

    async def record(self, name, arguments, ctx: CallContext, entry, call, schema=None):
        """Await `call` (a tool call, resource read or prompt get), then count it and write its audit line, the
        secrets of its arguments masked (see masked_arguments: by `schema`, the tool's inputSchema)."""
        started, result, error = time.monotonic(), None, None
        try:
            result = await call
            return result
        except BaseException as exc:
            error = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            raise
        finally:
            seconds = time.monotonic() - started
            failed = error is not None or bool((result or {}).get("isError"))
            asked = (result or {}).get("resultType") == "input_required"  # a round that asks: its retry is the call
            if not asked:
                self.metrics.count(entry.get("method", name), "rateLimited" if entry.get("rateLimited") else "refused"
                                   if entry.get("refused") else "cached" if entry.get("cached") else "error" if failed
                                   else "ok", seconds)
                if self.stats:
                    self.stats.changed()
            if self.audit is not None and not asked:
                client = ctx.session.client_info
                shown, secrets = masked_arguments(arguments, schema)
                if "argv" in entry:
                    entry["argv"] = _masked_argv(entry["argv"], secrets)
                if getattr(ctx.session, "person", None) is not None:  # their name (the caller: static:NAME)
                    entry["person"] = getattr(getattr(ctx.session, "signed_in", None), "subject", ctx.session.person)
                entry.update(time=_iso(time.time()), session=ctx.session.label, caller=ctx.session.caller, tool=name,
                             client="%s %s" % (client.get("name", "?"), client.get("version", "?")), arguments=shown,
                             exitCode=ctx.ran and ctx.ran.returncode, error=error, isError=failed,
                             ms=round(seconds * 1000, 1), bytes=len(json.dumps(result, default=str)) if result else 0)
                self.audit.write(entry, self.log, [secret for secret in secrets if len(secret) > 3])


# --------------------------------------------------------------------------
# Tool search: two tools instead of hundreds
# --------------------------------------------------------------------------
# `toolSearch` lists `mcpstudio__search_tools` and `mcpstudio__call_tool` (plus
# `toolSearchPin` globs and what the session found) instead of every tool.
# ToolIndex ranks (pure: BM25 over weighted fields, with a family of words for
# each common action and thing, and prefixes, bridging a person's words to an
# author's); ToolSearch is the surface a Server hands `tools/list` and the two
# tools to. A search sees only the catalog's listing: what permissions and
# allow/deny leave out is never found.

TOOL_SEARCH_MODES = ("on", "off", "auto")
CLIENT_CAPS = (("Cursor", 40), ("Windsurf", 50), ("VS Code", 128))  # the most tools each passes on, the smallest first
TOOL_SEARCH_THRESHOLD = 40  # auto: search when more would be listed (Cursor passes its agent the first 40)
FOUND_LIMIT = 30            # tools a session's searches add to its tools/list; the least recently found go first
SEARCH_LIMIT, SEARCH_MAX = 5, 20
SEARCH_QUERY_MAX = 500          # characters of a search_tools query (a task in a few words; 1 MB took seconds)
# (weight, group) of each field: a word's counts in the label (name, title) and in the body saturate apart,
# so that a long description never drowns what the name says
SEARCH_HINT_META = "anthropic/searchHint"    # a tool's own words for search (Claude Code reads it too)
ALWAYS_LOAD_META = "anthropic/alwaysLoad"    # a tool listed whatever the search (Claude Code: never deferred)
SEARCH_FIELDS = ((1.0, 0), (1.0, 0), (0.5, 1), (1.0, 1), (0.4, 1))  # name, title, server, description, parameters
LABEL_WEIGHT = 1.5
SYNONYM_WEIGHT, PREFIX_WEIGHT = 0.6, 0.4
COMPOUND_WEIGHT = 0.5  # each half of a word the index has only apart (flowchart: flow, chart)
SERVER_WEIGHT = 0.3  # the share of its server's score (all its tools' names and descriptions as one text) a found tool gets
ASCII_LEAST = 0.5  # a description with fewer of its letters ASCII letters (A-Z, a-z) is one the index cannot read
STOP_WORDS = frozenset(
    "a an the to of for in on at by with and or from into as is are be it its this that these those my me i we our "
    "you your can could would should please want need some any all every do does did how what which whose where am "
    "there their them then than so just also using use via about everything something anything have has had was were "
    "been being will shall may might must not no if when while again once here only too very ll re ve don let lets hey "
    "isn doesn didn aren wasn hi thanks ok okay really quickly kindly maybe".split())
FILE_FORMATS = "txt|md|json|ya?ml|csv|log|py|html?|pdf|png|jpe?g|svg|gif|tsx?|jsx|css|toml|ini|cfg|conf|sh|xml|env|sql|docx?|xlsx?|pptx?|zip|gz"


BINARY_FORMATS = "pdf|png|jpe?g|gif|docx?|xlsx?|pptx?|zip|gz"  # not text: read by a tool of their own


def _path_words(match):
    """What a file's path or name says: a file path, and a format that is not text (a .xlsx is read by what reads
    spreadsheets, not by every file tool; a .log or .md is text that any file tool reads)."""
    found = re.search(r"\.(%s)/?$" % BINARY_FORMATS, match.group(0), re.I)
    return " file path %s " % (found.group(1).lower() if found else "")


VALUE_SHAPES = (  # a value in a query says what kind of thing it is (a URL, a file's path, a #channel, ...): read first
    (r"\"[^\"/@]*\"|(?<!\w)'[^'/@]+'(?!\w)", " "),  # quoted: the person's own text (a message, a title), not the task
    (r"\bhttps?://\S+|\bwww\.\S+|(?<![\w.-])[\w-]+(?:\.[\w-]+)*\.(?:com|org|net|io|dev|co|uk)/\S*|\b(?:this|that|the) link\b", " url web page "),  # a URL, this link
    (r"(?<![\w.@-])([\w-]+(?:\.[\w-]+)*)\.(?:com|org|net|io|dev|ai|co|app)(?:\.[a-z]{2})?\b(?![/.@\w-])", r" \1 website web "),  # a bare domain (rivalapp.com, shop.co.uk; not an email's); its TLD is not a word
    (r"(?<!\S)(?:~|\.{1,2})?/[\w.*-]+(?:/[\w.*-]+)*/?|(?<!\S)[\w*~./-]*\.(?:%s)\b" % FILE_FORMATS, _path_words),  # a file's path or name
    (r"(?<!\S)[\w-]{4,}/[\w.-]{2,}(?=[\s,:;?]|$)", r" \g<0> repository "),  # owner/repo
    (r"\b\d{1,2}(?::\d\d)? ?[ap]m\b|\b\d{1,2}:\d\d\b", " time "),  # 3pm, 14:30
    (r"(?<!\w)#[a-z][\w-]*", " channel "),  # #general
    (r"(?<![\w-])(?!ISO-|CVE-|RFC-|UTF-|SHA-|COVID-|PR-|MR-|SKU-|INV-|ORDER-|GPT-|PEP-)[A-Z][A-Z0-9]+(?:-[A-Z][A-Z0-9]*)*-[0-9][0-9A-Z]{1,4}\b", r" \g<0> issue id resource "),  # an issue's short id, TINYSHOP-3F (not ISO-8601), names a resource
)
PHRASES = (  # an English phrase says what a query does (keep in mind: remember it); read after VALUE_SHAPES,
    # whose words (file path, url web page) some of them read, in this order
    (r"\bon my (?:computer|laptop|machine|mac|pc|desktop|disk|drive)\b|\bmy (?i:downloads|documents|desktop) folder\b", " file folder directory "),  # the computer's own files
    (r"(?i:\b(?:all|every) (?:the )?(?:page )?(?:pages|urls|links) (?:on|of|from|under|at)\b)", " all website discover "),  # a site's pages (not a Notion workspace's)
    (r"(?i:\b(?:keep (?:that |this |it )?in mind|(?:remember|note) that|don't forget|do not forget)\b)", " remember memory "),  # keep in mind, note that, don't forget
    (r"(?i:\bpods\b)", " get resources kubernetes "),  # pods are listed (not a pod's exec)
    (r"(?i:\b(?:latest|current|up[ -]to[ -]date|newest) (?:[\w.]+ ){0,3}?(?:docs|documentation|api(?= (?:for|of|reference)\b))\b)", " library docs "),  # the latest docs, the current API for ...: a library's
    (r"(?i:\bopen (?:an? |new )(?=issue|ticket|bug|pr\b|pull|mr\b|merge)|\badd\b(?!.{0,60}?\b(?:labels?|reactions?|comments?|issues?|observations?|relations?|emoji|columns?|branch|rows?|propert(?:y|ies))\b)(?=.{0,60}?\b(?:contacts?|deals?|compan(?:y|ies)|leads?)\b))", " create "),  # open an issue, add (Dana to my) contacts
    (r"(?i:\bgoogle\b(?! ?(?:maps|drive|docs?|sheets?|calendar|cloud|analytics|ads))|\bnews (?=about|on|for)\b)", " web search "),  # google it (not Google Drive), news about
    (r"(?i:\bhow big is (?!the \w+ (?:table|database|db|index)\b)|\bwhen was it last (?:changed|modified|touched|edited)\b)", " file size modified info "),  # how big is a file (not a table), when was it last touched
    (r"(?i:\blast \d+ commits\b|\bhistory of (?:the )?(?:changes|commits|edits)\b)", " commit log history "),  # the last 3 commits, the history of changes
    (r"\b(?:save|dump|write|export|put)\b.{0,60}?\b(?:to|into|as) +file path\b", " save write file path "),  # save, dump ... to a path
    (r"(?i:\bcommit\b.{0,40}?\b(?:(?:with )?(?:the |a )?(?:message|msg|note)|with)\b|\bsave (?:my|the|our|all|these|those) (?:changes|edits|work)\b(?:.{0,40}?\bwith (?:the |a )?note\b)?)", " commit changes "),  # commit ... with the message, save my changes
    (r"\bwhat(?:'s| is)? the time\b|\btime is it\b", " current time "),  # what's the time
    (r"\bwhat (?:do )?you (?:remember|know)\b|\bwhat did (?:[iI]|we) tell you\b", " search memory "),  # what do you know about
    (r"\blog (?:an? )?(?=(?:note|call|meeting|activity)\b)(?![^.?!]{0,80}\b(?:memory|graph|notion|github|gitlab|issue|pr|page|database)\b)", " add crm activity "),  # log a note, log a call: a CRM's activity
    (r"\bpull\b(?![ -]?req| up)", " extract "),  # to pull data out (not a pull request, not pull up)
    (r"\bsince (?:my|the|our|[iI]) last (?:commit|save)d?\b|(?:\bnot|\bnever|n't) (?:yet )?committed\b(?! to\b)|\bworking (?:tree|copy)\b|(?i:\bwhat have i (?:changed|modified)\b|\bfiles are (?:modified|changed)\b|\buncommitted\b)", " working tree status git "),  # since my last commit, haven't committed, uncommitted, my working tree
)
WORD_FAMILIES = """
delete remove drop destroy erase trash purge discard forget nuke rid clean
update edit modify change set patch alter rename adjust tweak mark replace swap
search find query lookup locate grep filter seek discover google hunt bing look
send post message notify reply dm chat tell ping announce shoot respond answer
history recent said conversation timeline catch earlier
run execute exec invoke launch trigger perform call kick fire
pr pull merge mr request
folder directory dir path
channel room conversation thread
distance far travel drive duration
company organization org business account
move rename relocate
save store write persist keep
local git
commit change revision history
network request traffic http api
release tag version ship publish
upload attach
size length count many space big large disk storage
elevation altitude height high sea
connect link relate relation associate association married depends manages
record object entry item
coordinate latitude longitude geocode lat lng
diff difference different compare changed modified
slow performance speed latency fast forever
content text body markdown contain
paper research arxiv study
sum add total calculate math arithmetic plus
reaction emoji thumbs upvote
priority severity urgent important
xlsx xls spreadsheet workbook sheet
"""  # one family a line: words for the same action or thing


def _stem(word):
    """A light stem: plurals, -ing, -ed (-ied: -y), a last e and British -ise (`issues`, `mapping`, `created`,
    `create`, `summarised` -> `issu`, `map`, `creat`, `creat`, `summariz`)."""
    word = re.sub(r"(?<=\w\w)ie[sd]$", "y", re.sub(r"(?<=\w\w[iy])s(?=(?:e|ed|es|ing|ation)$)", "z", word))
    word = re.sub(r"(?<=\w\w)(?:(?<=ch|sh|ss|.x)es|(?<![siu])s)$", "", word)
    stem = re.sub(r"(?<=\w\w\w\w)ing$|(?<=\w\w\w)ed$", "", word)
    if stem != word:
        stem = re.sub(r"([^aeiouls])\1$", r"\1", stem)
    return re.sub(r"(?<=\w\w\w)e$", "", stem)


def split_words(text):
    """A text's words: split at case changes (`createPullRequest`, `HTTPServer`) and at anything not a letter or
    digit, lowercased, of two characters or more."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])|(?<=[0-9])(?=[A-Z](?:[a-z]|[A-Z]{2}))|(?<=[A-Z])(?=[A-Z][a-z])(?![A-Z]s(?![a-z]))", " ", text).lower()
    return re.findall(r"[a-z0-9]{2,}", spaced)


def read_shapes(query, shapes):
    """`query` with each (pattern, words) of `shapes` replaced by its words, in order."""
    for pattern, words in shapes:
        query = re.sub(pattern, words, query)
    return query


def _as_is(word):
    """No stem: the word itself."""
    return word


def _plain_split(text):
    """Words without the case split: lowercase runs of letters and digits."""
    return re.findall(r"[a-z0-9]{2,}", text.lower())


# The ranker's stages, in the order a query meets them: value shapes, then phrases (which read words the
# shapes write), split, stop words, stem, then each word's expansion (families, prefixes) and the share of
# its server's score. ToolIndex takes them whole, so that a benchmark switches one off (SEARCH_STAGES_OFF).
SearchStages = collections.namedtuple(
    "SearchStages", "values phrases split stop_words stem families prefixes server_share fields")
SEARCH_STAGES = SearchStages(VALUE_SHAPES, PHRASES, split_words, STOP_WORDS, _stem, WORD_FAMILIES, True, SERVER_WEIGHT,
                             (SEARCH_FIELDS, LABEL_WEIGHT))
SEARCH_STAGES_OFF = SearchStages((), (), _plain_split, frozenset(), _as_is, "", False, 0.0,  # each stage switched off
                                 (((1.0, 1),) * len(SEARCH_FIELDS), 1.0))  # fields: one text, every part alike


def search_words(text, stems, stages=None):
    """The words of `text` for ranking: split, stop words out, stemmed (`stems`: the stems of the words seen so far)."""
    stages = stages or SEARCH_STAGES
    return [stems.get(word) or stems.setdefault(word, stages.stem(word)) for word in stages.split(text)
            if word not in stages.stop_words]


def _families(table, stem):
    """word -> the other words of its lines in `table` (one family a line), all stemmed."""
    families = {}
    for line in table.splitlines():
        words = {stem(word) for word in line.split()}
        for word in words:
            families.setdefault(word, set()).update(words - {word})
    return families


class ToolIndex:
    """BM25F over tool definitions' weighted fields (pure). A query word also finds the words of its
    families (another verb for the action, another noun for the thing), the longer words it
    begins, the words of five letters or more that begin it and, for a word the index lacks, the two
    words it has that spell it (a compound), each for less: the best of a word's
    matches in a tool counts once. A found tool's server adds a share of its own score, as the
    context of what the tool's words leave unsaid."""

    K1, B = 1.2, 0.75

    def __init__(self, tools, stages=SEARCH_STAGES):
        self.stages, self.tools = stages, tools
        self.families = _families(stages.families, stages.stem)
        stems, texts, self.server_of = {}, {}, []  # server -> (its number, its tools' names and descriptions)
        texts_of = [self._fields(tool) for tool in tools]
        fields = [[search_words(text, stems, stages) for text in texts] for texts in texts_of]
        for name, _, server, description, _ in texts_of:
            self.server_of.append(texts.setdefault(server, (len(texts), []))[0])
            texts[server][1].append(name + " " + description)
        self.servers = len(texts) > 1 and stages.server_share and ToolIndex(
            [{"name": server, "description": " ".join(parts)} for server, (_, parts) in texts.items()], stages)
        weights, label_weight = stages.fields
        averages = [sum(len(words[column]) for words in fields) / max(len(tools), 1) or 1.0
                    for column in range(len(weights))]
        self.postings = {}  # word -> [(tool number, its score before idf)]
        for number, words in enumerate(fields):
            counts = {}  # word -> [in the label, in the body]: weighted, normalized by the field's length
            for column, (weight, group) in enumerate(weights):
                share = weight / (1 - self.B + self.B * len(words[column]) / averages[column])
                for word in words[column]:
                    counts.setdefault(word, [0.0, 0.0])[group] += share
            for word, (label, body) in counts.items():
                score = label_weight * label * (self.K1 + 1) / (label + self.K1) + body * (self.K1 + 1) / (body + self.K1)
                self.postings.setdefault(word, []).append((number, score))
        self.idf = {word: math.log(1 + (len(tools) - len(found) + 0.5) / (len(found) + 0.5))
                    for word, found in self.postings.items()}
        self.by_prefix = {}
        for word in self.postings:
            self.by_prefix.setdefault(word[:4], []).append(word)

    @staticmethod
    def _fields(tool):
        """name, title, server, description and parameters: the texts of SEARCH_FIELDS (a tool's
        `anthropic/searchHint`, the words its author chose for search, counts as its description; a description
        mostly in letters the split does not read (it reads ASCII letters: Chinese say) has the tool's name in front,
        so that the name counts in the body as an English description's words would)."""
        description = str(tool.get("description") or "")
        server, _, rest = description[1:].partition("] ") if description.startswith("[") else ("", "", description)
        other = 0 if rest.isascii() else sum(map(str.isalpha, re.sub(r"[\x00-\x7f]+", "", rest)))  # é, ß, 新 ...
        plain = other and len(rest) - len(re.sub(r"[A-Za-z]+", "", rest))  # ASCII letters, counted only when others are
        if other and plain < ASCII_LEAST * (plain + other):
            rest = tool["name"] + " " + rest  # in Chinese, say: the name stands in for what the split cannot read
        hint = _object(tool.get("_meta")).get(SEARCH_HINT_META)
        if isinstance(hint, str):
            rest = rest + " " + hint
        properties = (tool.get("inputSchema") or {}).get("properties")
        parameters = " ".join("%s %s" % (key, value.get("description", "")) for key, value in properties.items()
                              if isinstance(value, dict)) if isinstance(properties, dict) else ""
        return tool["name"], str(tool.get("title") or ""), server, rest, parameters

    def expand(self, word):
        """The index's words a query word finds, each with the share of a match it is worth."""
        found = {other: SYNONYM_WEIGHT for other in self.families.get(word, ()) if other in self.postings}
        for other in self.by_prefix.get(word[:4], ()) if len(word) > 3 and self.stages.prefixes else ():
            if other.startswith(word) or word.startswith(other) and len(other) > 4 or len(other) == len(word) and sorted(other) == sorted(word):
                found.setdefault(other, PREFIX_WEIGHT)
        if word in self.postings:
            found[word] = 1.0
        elif len(word) >= 7 and self.stages.prefixes:  # a compound the tools spell apart: flowchart, headcount
            for cut in range(3, len(word) - 2):
                if word[:cut] in self.postings and word[cut:] in self.postings:
                    found.setdefault(word[:cut], COMPOUND_WEIGHT)
                    found.setdefault(word[cut:], COMPOUND_WEIGHT)
                    break
        return found

    def search(self, query, limit):
        """The best `limit` tools for `query`, best first (none when no word matches)."""
        query = read_shapes(read_shapes(query, self.stages.values), self.stages.phrases)
        import heapq
        totals, context = self.scores(query), self.servers.scores(query) if self.servers else {}
        for number in totals:
            totals[number] += self.stages.server_share * context.get(self.server_of[number], 0.0)
        return [self.tools[number] for number in heapq.nsmallest(limit, totals, key=lambda number: (-totals[number], number))]

    def scores(self, query):
        """Each matching tool's number and score (`query` with its shapes and phrases already read)."""
        totals, said = {}, set()  # the words of the families of the query's words so far
        for word in dict.fromkeys(search_words(query, {}, self.stages)):
            again = 0.5 if word in said else 1.0  # a thing said twice in other words counts one and a half
            said |= self.families.get(word, set())
            found = self.expand(word)
            weight = self.idf[word] * again if word in self.postings else 0.0
            best = {number: score * weight for number, score in self.postings.get(word, ())}  # the word itself first
            get = best.get
            for other, share in found.items():
                weight = self.idf[other] * share * again
                for number, score in self.postings[other] if other != word else ():
                    value = score * weight
                    if value > get(number, 0.0):
                        best[number] = value
            for number, score in best.items():
                totals[number] = totals.get(number, 0.0) + score
        return totals


SEARCH_DESCRIPTION = (
    "Search this server's tools (%d of them are not listed) and get the best matches with their full "
    "definitions. Describe the task in a few words: the action and the thing, and the service if you "
    "know it (e.g. \"github create issue\", \"take a screenshot of the page\", \"slack post message\"). "
    "Found tools are added to your tool list: call them directly by name, or through %s.%s")
SEARCH_SERVERS_SHOWN = 40  # servers the search tool's description names, the most tools first


def servers_behind(tools):
    """The sentence that names the servers behind a search and how many tools each has (a query that names the
    service finds its tools), or "" when the tools name no server (`[server] ...` descriptions)."""
    descriptions = (str(tool.get("description")) for tool in tools)
    counts = collections.Counter(text[1:].partition("] ")[0] for text in descriptions
                                 if text.startswith("[") and "] " in text)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    shown = ", ".join("%s (%d)" % item for item in ranked[:SEARCH_SERVERS_SHOWN])
    more = len(ranked) - SEARCH_SERVERS_SHOWN
    return " Servers (tools): %s%s." % (shown, " and %d more" % more if more > 0 else "") if ranked else ""


def search_summary(count, mode, threshold):
    """What a client's tools/list holds, in words, for `count` tools (serve's count: the config's own, the
    servers' listed ones and the manager tools) under toolSearch `mode` (None: auto)."""
    if mode == "on" or mode != "off" and count > threshold:
        return "on: %d tools behind search%s" % (count, "" if mode == "on" else " (past %d; Claude Code gets them "
                                                                              "listed, it searches itself)" % threshold)
    return "off: %d tools listed%s" % (count, "" if mode == "off" else " (search starts past %d)" % threshold)


class ToolSearch:
    """`toolSearch` for one Server: what a client's tools/list shows, the two tools, and per session the
    tools its searches found (at most FOUND_LIMIT, the least recently found dropped first). It gets the Server's
    catalog and its tools_call (mcpstudio__call_tool takes the path of a direct call)."""

    def __init__(self, catalog, tools_call, mode, threshold, pins, separator="__"):
        self.catalog, self.tools_call = catalog, tools_call
        self.mode, self.threshold, self.pins = mode, threshold, pins
        self.search_name = MANAGER_PREFIX + separator + "search_tools"
        self.call_name = MANAGER_PREFIX + separator + "call_tool"
        self.found = weakref.WeakKeyDictionary()  # Session -> OrderedDict of found names
        self._index = self._key = None

    def applies(self, count, params, ctx):
        """Whether this client gets the search surface: `on`, or `auto` past the threshold for a client
        other than Claude Code (which defers and searches tools itself)."""
        if self.mode != "auto" or count <= self.threshold:
            return self.mode == "on"
        client = (params.get("_meta") or {}).get(META_CLIENT_INFO) if ctx.modern else ctx.session.client_info
        return not re.search(r"claude.?code", str((client or {}).get("name")), re.I)

    def handles(self, name):
        return self.mode != "off" and name in (self.search_name, self.call_name)

    def listing(self, tools, params, ctx):
        """The client's tools/list: the two tools, the pinned ones and this session's found ones."""
        if not self.applies(len(tools), params, ctx):
            return tools
        found = self.found.get(ctx.session, ())
        pinned = [_match(tool["name"], self.pins) or _object(tool.get("_meta")).get(ALWAYS_LOAD_META) is True
                  for tool in tools]
        shown = [dict(tool, _meta=dict(_object(tool.get("_meta")), **{ALWAYS_LOAD_META: True})) if pin else tool
                 for tool, pin in zip(tools, pinned) if pin or tool["name"] in found]  # a client loads the pinned always
        return [{"name": self.search_name, "description": SEARCH_DESCRIPTION % (
                    len(tools) - len(shown), self.call_name, servers_behind(tools)),
                 "inputSchema": {"type": "object", "required": ["query"], "properties": {
                     "query": {"type": "string", "description": "the task in a few words", "maxLength": SEARCH_QUERY_MAX},
                     "limit": {"type": "integer", "maximum": SEARCH_MAX, "default": SEARCH_LIMIT}}},
                 "annotations": {"readOnlyHint": True}},
                {"name": self.call_name, "description": "Call a tool %s found by its name, as a direct call would."
                 % self.search_name, "inputSchema": {"type": "object", "required": ["name"], "properties": {
                     "name": {"type": "string"}, "arguments": {"type": "object"}}}}] + shown

    async def call(self, name, params, arguments, ctx):
        """Run mcpstudio__search_tools or mcpstudio__call_tool (whose call takes the path of a direct one)."""
        target, given = arguments.get("name"), arguments.get("arguments", {})
        if name == self.call_name and isinstance(target, str) and not self.handles(target) and isinstance(given, dict):
            try:
                return await self.tools_call(dict(params, name=target, arguments=given), ctx)
            except McpError as exc:
                raise ToolError(exc.message) from None
        query, limit = arguments.get("query"), arguments.get("limit", SEARCH_LIMIT)
        if (name == self.call_name or not isinstance(query, str) or len(query) > SEARCH_QUERY_MAX
                or type(limit) is not int or not 0 < limit <= SEARCH_MAX):
            raise ToolError("%s takes `query` (a few words, %d characters at most) and `limit` (1 to %d); %s takes "
                            "`name` (another tool's) and `arguments` (an object)"
                            % (self.search_name, SEARCH_QUERY_MAX, SEARCH_MAX, self.call_name))
        if not re.search(r"\w", query):  # an empty query matches nothing: say what it takes rather than "Found 0"
            raise ToolError("%s needs words in `query`: the task in a few words (the action, the thing, the service "
                            "if known), e.g. \"create a github issue\"" % self.search_name)
        catalog = self.catalog
        tools = await catalog.tools() if catalog.stale else catalog.listing  # the last listing's tools
        key = [(tool["name"], tool.get("description"), _object(tool.get("_meta")).get(SEARCH_HINT_META)) for tool in tools]
        if key != self._key:  # the index is built again only when a name or description changed
            self._index, self._key = ToolIndex(tools), key
        hits = [tool for tool in self._index.search(query, limit) if not catalog.hidden(tool["name"], ctx)]
        if hits and not ctx.modern:
            self.remember([tool["name"] for tool in hits], ctx.session)
        lines = "".join("\n%s: %s" % (tool["name"], str(tool.get("description")).split("\n")[0][:160]) for tool in hits)
        text = ("Found 1 tool; call it by name (or through %s):%s" % (self.call_name, lines) if len(hits) == 1 else
                "Found %d tools; call them by name (or through %s):%s" % (len(hits), self.call_name, lines) if hits else
                "No tool matches %s: try other words (the action, the thing, the service if known)" % json.dumps(query))
        return {"content": [{"type": "text", "text": text}], "structuredContent": {"tools": hits}}

    def remember(self, names, session):
        """Add found tools to the session's; list_changed when its tools/list gained one."""
        found = self.found.setdefault(session, collections.OrderedDict())
        grew = not found.keys() >= set(names)
        for name in names:
            found[name] = found.pop(name, True)
        while len(found) > FOUND_LIMIT:
            found.popitem(last=False)
        if grew:
            session.notify("notifications/tools/list_changed", {})


def owned_by(session, owner):
    """Whether `session` may hear what `owner` (an isolated process's Upstream.owner; None: everyone's) says."""
    return owner is None or (session is owner[1] if owner[0] == "session" else session.person == owner[1])


# --------------------------------------------------------------------------
# The 2026-07-28 era: per-request `_meta`, discovery, subscriptions
# --------------------------------------------------------------------------

_NOT_MODERN = tuple(("initialize ping logging/setLevel resources/subscribe resources/unsubscribe tasks/result tasks/list").split())


def discover(server, params, ctx):
    """`server/discover` (2026-07-28): versions, capabilities and identity, cacheable."""
    result = {"supportedVersions": list(MODERN_VERSIONS + PROTOCOL_VERSIONS),
              "capabilities": server.capabilities(modern=True)}
    if server.instructions:
        result["instructions"] = server.instructions
    server.catalog.session_started()
    return result


async def _quietly(call):
    """Await `call`, an unsubscribe nobody waits for: its failure only matters to the log."""
    try:
        await call
    except McpError:
        pass


async def listen(server, params, ctx):
    """`subscriptions/listen` (2026-07-28): list changes for as long as the client listens."""
    wanted = _object(params.get("notifications"))
    offered = {"toolsListChanged": True, "resourcesListChanged": server.catalog.serves("resources"),
               "promptsListChanged": server.catalog.serves("prompts")}
    granted = {key: True for key, ok in offered.items() if ok and wanted.get(key) is True}
    uris = wanted.get("resourceSubscriptions")
    entry = (ctx, granted)
    server.subscriptions.append(entry)
    try:
        if isinstance(uris, list) and server.catalog.serves("subscribable"):  # each one its server takes
            granted["resourceSubscriptions"] = []
            for uri in dict.fromkeys(u for u in uris if isinstance(u, str)):
                try:
                    await server.watch(uri, ctx, True, ctx)
                except McpError as exc:  # an UpstreamError too
                    server.log.debug("subscriptions/listen: %s not subscribed: %s", uri, exc.message)
                else:
                    granted["resourceSubscriptions"].append(uri)
        ctx.notify("notifications/subscriptions/acknowledged",
                   {"_meta": {META_SUBSCRIPTION: ctx.request_id}, "notifications": granted})
        await asyncio.get_running_loop().create_future()  # until the client cancels it
    finally:
        server.subscriptions.remove(entry)
        for uri in granted.get("resourceSubscriptions", ()):
            asyncio.ensure_future(_quietly(server.watch(uri, ctx, False, ctx)))


def modern_methods(server):
    """The methods of the era: no handshake, ping or setLevel; discovery and subscriptions."""
    methods = {m: h for m, h in server.methods.items() if m not in _NOT_MODERN}
    methods["server/discover"] = lambda params, ctx: discover(server, params, ctx)
    methods["tasks/update"] = server.tasks_update
    if server.catalog.dynamic:
        methods["subscriptions/listen"] = lambda params, ctx: listen(server, params, ctx)
    return methods


_CACHEABLE = frozenset(("server/discover", "tools/list", "prompts/list", "resources/list",
                        "resources/templates/list", "resources/read"))


def _complete(server, method, result):
    result = _with_meta(dict(result, resultType=result.get("resultType", "complete")),  # a CreateTaskResult: "task"
                        META_SERVER_INFO, server.server_info())
    if method in _CACHEABLE:
        result.setdefault("ttlMs", 0 if server.catalog.dynamic else 300000)
        result.setdefault("cacheScope", "public")
    return result


async def _modern_result(server, method, coroutine):
    try:
        result = await coroutine
    except McpError as exc:
        if exc.code == RESOURCE_NOT_FOUND:  # in 2026-07-28 an unknown resource is invalid params
            raise McpError(INVALID_PARAMS, exc.message, exc.data)
        raise
    return _complete(server, method, result)


def dispatch_modern(server, method, params, ctx: CallContext, meta):
    """A 2026-07-28 request: checked `_meta`, then served statelessly; results marked complete."""
    ctx.modern = True
    if (not isinstance(meta, dict) or not isinstance(meta.get(META_VERSION), str)
            or not isinstance(meta.get(META_CAPABILITIES), dict)):
        raise _invalid_params("a %s request needs `_meta` with `%s` and `%s`"
                              % (MODERN_VERSIONS[0], META_VERSION, META_CAPABILITIES))
    if meta[META_VERSION] not in MODERN_VERSIONS:
        raise McpError(UNSUPPORTED_VERSION, "Unsupported protocol version",
                       {"supported": list(MODERN_VERSIONS), "requested": meta[META_VERSION]})
    level = meta.get(META_LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        raise _invalid_params("`%s` must be one of %s" % (META_LOG_LEVEL, ", ".join(LOG_LEVELS)))
    ctx.level = level
    ctx.capabilities = meta[META_CAPABILITIES]
    ctx.inputs = {key: params[key] for key in ("inputResponses", "requestState") if key in params}
    refusal = server.catalog.refusal
    if refusal:
        raise refusal
    handler = server.modern_methods.get(method)
    if not handler:
        raise McpError(METHOD_NOT_FOUND, "Method not found: %s%s" % (
            method, " (not part of protocol %s)" % MODERN_VERSIONS[0] if method in _NOT_MODERN else ""))
    result = handler(params, ctx)
    if asyncio.iscoroutine(result):
        return _modern_result(server, method, result)
    return _complete(server, method, result)


# --------------------------------------------------------------------------
# Configuration: the one place a config file becomes sources
# --------------------------------------------------------------------------
# A JSON file (comments and trailing commas allowed) of tools, resources and
# script folders. Every mistake in it stops startup with one message that
# names the file and the line and column, or the key path, and says what is
# expected. `${VAR}` expands from the environment in the fields listed in
# _EXPANDED, never in command templates or tool arguments.

CONFIG_TIMEOUT = 30.0   # seconds, when neither the tool, the file nor --timeout says
_TOP_KEYS = tuple(("name description instructions working_directory environment tools resources scripts skills "
                   "skillPrompts command timeout separator taskSupport max_text $schema audit rateLimit cache confirm "
                   "openEndpoints toolSearch toolSearchThreshold toolSearchPin signIn people admins").split())
_UPSTREAM_KEYS = tuple("mcpServers servers namespaces defaultNamespace defaultNamespaceId toolPermissions".split())
# mcp-studio's (and mcpmu's) own bookkeeping in its config file: accepted, not used.
_BOOKKEEPING_KEYS = tuple(("schemaVersion lastModified daemonMode metrics proxies mcp_oauth_credentials_store "
                           "mcp_oauth_callback_port").split())
_TOOL_KEYS = tuple(("name title description command command_template parameters timeout working_directory environment "
                    "stdin shell annotations allow_dash_values within output_format ok_exit_codes taskSupport rateLimit "
                    "cache confirm max_text output_folder interactive answers file_resources").split())
_OUTPUT_FORMATS = ("text", "json")  # CLI-as-MCP's output_format: json makes stdout structuredContent
_PARAMETER_KEYS = tuple("type description required default enum items ask secret".split())
_RESOURCE_KEYS = tuple(("uri name title description command mime_type mimeType timeout working_directory environment within").split())
_SCRIPTS_KEYS = ("path", "include", "exclude")
SIGNIN_KEYS = tuple("issuer audience introspection clientId clientSecret scopes".split())  # `signIn`
PERSON_KEYS = ("tokenSha256", "groups", "email")  # an entry of `people`
_ANNOTATIONS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint", "title")
_PARAMETER_TYPES = tuple("string integer number boolean array file".split())
_JSON_STRING = r'"(?:[^"\\]|\\.)*"?'  # to its closing quote, or the end of an unfinished one
_ENV_REFERENCE = re.compile(
    r"\$\$|\$\{(?:(?:ENV|env):)?([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)((?:[^{}]|\$\{[^{}]*\})*))?\}")


def strip_json_comments(text):
    """Blank out // and /* */ comments and trailing commas, keeping every line and column (strings kept whole)."""
    def blank(match):
        return match.group() if match.group()[:1] == '"' else re.sub(r"[^\n]", " ", match.group())
    text = re.sub(_JSON_STRING + r"|//[^\n]*|/\*(?:.*?\*/|.*)", blank, text, flags=re.S)
    return re.sub(_JSON_STRING + r"|,(?=\s{0,4094}[\]}])", blank, text, flags=re.S)


class ConfigProblems:
    """The mistakes found in one config file, told together: each entry is read on past another's mistake."""

    def __init__(self, path):
        self.path, self.found = path, []

    def add(self, exc: ConfigError):
        """A mistake, and the others it carries (`more`: the other unknown keys of one object)."""
        self.found.extend([str(exc)] + getattr(exc, "more", []))

    def gathered(self, step, *args, default=None):
        """step(*args), or `default` with its ConfigError kept."""
        try:
            return step(*args)
        except ConfigError as exc:
            self.add(exc)
            return default

    def all_of(self, step, *args):
        """step(*args), unless it or a step it gathered found a mistake: then one ConfigError for them all."""
        found = self.gathered(step, *args)
        if self.found:
            raise self.error()
        return found

    def error(self) -> ConfigError:
        """One ConfigError for them: one as it is, several each on its own line under the file's name."""
        if len(self.found) == 1:
            return ConfigError(self.found[0])
        here = "%s: " % self.path
        return ConfigError("%s: %d problems:\n  %s" % (self.path, len(self.found), "\n  ".join(
            problem[len(here):] if problem.startswith(here) else problem for problem in self.found)))


def _join(where, key):
    return "%s.%s" % (where, key) if where else key


def _close_match(word, choices, cutoff=0.6):
    """The one of `choices` most like `word`, for a did-you-mean hint; None when none is close."""
    import difflib
    return next(iter(difflib.get_close_matches(word, choices, 1, cutoff)), None)


def read_answers(loader, spec, where):
    """A tool's `answers` ([{"prompt": regex, "answer": text}]: questions answered without asking) as (pattern, text)."""
    try:
        return [(re.compile(rule["prompt"]), rule["answer"] + "") for rule in loader.get(spec, "answers", list, where, [])]
    except (TypeError, KeyError, re.error) as exc:
        raise loader.error(_join(where, "answers"), "expected a list of {\"prompt\": \"a regular expression\", "
                           "\"answer\": \"text\"} (%s)" % exc)


def read_script_folder(loader, entry, where, runner, settings, log, separator, script_options):
    """One `scripts` entry (a path, or an object with path, include and exclude) as a ScriptDirectory."""
    if isinstance(entry, str):
        entry = {"path": entry}
    loader.keys(entry, _SCRIPTS_KEYS, where)
    root = loader.folder_path(loader.get(entry, "path", str, where, ""), _join(where, "path"))
    globs = {key: loader.strings(entry, key, where, "expected a list of glob strings", []) for key in ("include", "exclude")}
    return ScriptDirectory(root, runner, settings, log, separator=separator, **globs, **(script_options or {}))


def read_skill_folder(loader, root, where):
    """One `skills` entry: a folder of skills."""
    if not isinstance(root, str):
        raise loader.error(where, "expected a folder path (text)")
    return loader.folder_path(root, where)


def read_max_text(loader, obj, where, default=None):
    """obj["max_text"]: how many characters of output a result shows, a positive whole number."""
    value = loader.get(obj, "max_text", int, where, default)
    if value is not None and value < 1:
        raise loader.error(_join(where, "max_text"), "expected a positive whole number of characters, not %d" % value)
    return value


def read_rules(loader, obj, where):
    """A tool's, server's or file's guard rules, checked: rateLimit (calls, seconds, scope), cache (ttl, shared),
    confirm (true, false or "destructive")."""
    rules = {}
    for key, fields, last, example in (
            ("rateLimit", ("calls", "seconds", "scope"), ("session", "global"),
             '{"calls": 10, "seconds": 60}, and `scope` "session" (the default: each client its own) or "global"'),
            ("cache", ("ttl", "shared"), (False, True), '{"ttl": SECONDS}, and `shared` true or false')):
        value = loader.get(obj, key, dict, where)
        if value is not None:
            loader.keys(value, fields, _join(where, key))
            rules[key] = tuple(value.get(name, 0) for name in fields[:-1]) + (value.get(fields[-1], last[0]),)
            if not all(type(number) in NUMBER and number > 0 for number in rules[key][:-1]) or \
                    rules[key][-1] not in last or rules[key][0] % 1:
                raise loader.error(_join(where, key), "expected %s" % example)
    if obj.get("confirm", False) not in (True, False, "destructive"):
        raise loader.error(_join(where, "confirm"), "expected true, false or \"destructive\" (ask before each tool not "
                           "annotated readOnlyHint or destructiveHint false)")
    if "confirm" in obj:
        rules["confirm"] = obj["confirm"]
    return rules


def read_tool_search(loader, data):
    """(toolSearch, toolSearchThreshold, toolSearchPin) of a config file."""
    pins = loader.strings(data, "toolSearchPin", "", "expected a list of glob strings (\"time__*\")", [])
    return (loader.choice(data, "toolSearch", TOOL_SEARCH_MODES, ""),
            loader.get(data, "toolSearchThreshold", int, "", TOOL_SEARCH_THRESHOLD), pins)


def read_guard(loader, data):
    """A config file's guard rails: (its rules, its AuditLog or None, the HTTP paths it opens)."""
    audit = loader.get(data, "audit", dict, "")
    if audit is not None:
        loader.keys(audit, ("file", "maxBytes", "keep", "required"), "audit")
        sizes = [loader.get(audit, key, int, "audit", default) for key, default in (("maxBytes", AUDIT_MAX_BYTES), ("keep", AUDIT_KEEP))]
        if not isinstance(audit.get("file"), str) or sizes[0] < 1024 or sizes[1] < 1:
            raise loader.error("audit", "expected {\"file\": PATH} with a `maxBytes` of at least 1024 and a `keep` of "
                               "at least 1 (rotated files kept)")
        audit = AuditLog(os.path.join(loader.folder, os.path.expanduser(loader.expand(audit["file"], "audit.file"))),
                         *sizes, loader.get(audit, "required", bool, "audit", False))
    opened = loader.get(data, "openEndpoints", list, "", [])
    if not all(path in ("/health", "/metrics") for path in opened):
        raise loader.error("openEndpoints", "expected a list of \"/health\" and \"/metrics\" (served without the "
                           "--http-token), not %s" % json.dumps(opened))
    return read_rules(loader, data, ""), audit, opened


def read_sign_in(loader, data):
    """A config's `signIn` and `people` as {"issuer", "audience", "introspection", "clientId", "clientSecret",
    "scopes", "people": {name: (sha256 hex, groups, email)}, "admins": [who may use the manager tools]}, or None
    when it has neither."""
    plan = loader.get(data, "signIn", dict, "")
    people = loader.get(data, "people", dict, "")
    admins = loader.strings(data, "admins", "", "expected a list of who may use the manager tools: subjects, emails, "
                            "\"group:NAME\" or \"scope:NAME\"", blank=False)
    if plan is None and people is None:
        if admins is not None:
            raise loader.error("admins", "names who of the signed-in people may use the manager tools: the config "
                               "signs no one in (signIn, people)")
        return None
    plan = dict(plan or {})
    loader.keys(plan, SIGNIN_KEYS, "signIn")
    for key in SIGNIN_KEYS[:-1]:
        value = loader.get(plan, key, str, "signIn")
        plan[key] = value and loader.expand(value, "signIn." + key)
        if key in ("issuer", "audience", "introspection") and value and not re.match(r"https?://[^/?#\s]+", plan[key]):
            raise loader.error("signIn." + key, "expected an https URL, not %s" % json.dumps(value))
    plan["scopes"] = loader.strings(plan, "scopes", "signIn", "expected a list of scope names every token must hold", [])
    if plan["introspection"] and not plan["clientId"]:  # clientId alone: the client of a token exchange (RFC 8693)
        raise loader.error("signIn", "opaque tokens need `introspection` (the RFC 7662 endpoint) and `clientId` "
                           "(with `clientSecret`) together")
    if (plan["introspection"] or people is None) and not plan["issuer"]:
        raise loader.error("signIn", "expected `issuer`: the URL of the identity provider whose tokens are accepted")
    plan["people"] = {}
    for name, entry in (people or {}).items():
        where = "people.%s" % name
        if not isinstance(entry, dict):
            raise loader.error(where, "expected {\"tokenSha256\": HEX, \"groups\": [...]}")
        loader.keys(entry, PERSON_KEYS, where)
        digest = loader.get(entry, "tokenSha256", str, where, "")
        groups = loader.strings(entry, "groups", where, "expected a list of group names", [])
        if not re.fullmatch(r"[0-9a-fA-F]{64}", digest) or not name:
            raise loader.error(_join(where, "tokenSha256"), "expected the SHA-256 of the person's token, 64 hex digits "
                               "(e.g. printf %%s \"$TOKEN\" | sha256sum)")
        plan["people"][name] = (digest.lower(), groups, loader.get(entry, "email", str, where))
    plan["admins"] = admins or []
    return plan


def _given(obj):
    """An object without its null values: CLI-as-MCP writes every unset key as null
    (`"working_directory": null`, `"default": null`), which means "not given"."""
    if isinstance(obj, dict) and any(value is None for value in obj.values()):
        return {key: value for key, value in obj.items() if value is not None}
    return obj


def _as_tuple(kind):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return kinds + ((float,) if int in kinds else ())


def _uri_pattern(uri):
    """A regex matching the URIs of a URI template, and its parameter names."""
    params, parts, last = [], [], 0
    for match in re.finditer(r"\{(%s)\}" % _FIELD_NAME, uri):
        parts.append(re.escape(uri[last:match.start()]))
        params.append(match.group(1).replace("-", "_"))
        parts.append("(?P<%s>[^/?#]+)" % params[-1])
        last = match.end()
    parts.append(re.escape(uri[last:]))
    return (re.compile("".join(parts)) if params else None), params


def uri_value(key, value):
    """Check one decoded value of a resource template: no way out of the place it names.

    `..`, a separator (only an encoded one, %2F or %5C, can be there), an
    absolute or drive path and NUL are refused; a field declared in "within"
    is checked by confine_path instead.
    """
    problem = ("holds a NUL character" if "\0" in value else
               "holds a path separator (/ or \\)" if "/" in value or "\\" in value else
               "is `..`, the parent folder" if value == ".." else
               "is a drive path" if re.match(r"[A-Za-z]:", value) else None)
    if problem:
        raise ToolError("`%s` %s (%r); a resource template value names one item. To accept paths, declare the "
                        "parameter a path inside a folder with \"within\"" % (key, problem, _clip(value, 60)))
    return value


class CommandResource:
    """A resource (or resource template) whose read runs a command."""

    def __init__(self, uri, name, template, runner, settings, pattern, params,
                 description=None, title=None, mime_type="text/plain", within=None):
        self.uri, self.name, self.template, self.runner, self.settings = uri, name, template, runner, settings
        self.pattern, self.params = pattern, params
        self.within = within or {}  # parameter -> the folder its path must stay in
        self.description, self.title, self.mime_type = description, title, mime_type

    def definition(self):
        """The MCP Resource (or ResourceTemplate) object clients list."""
        entry = {"uriTemplate" if self.pattern else "uri": self.uri, "name": self.name, "mimeType": self.mime_type}
        if self.title:
            entry["title"] = self.title
        if self.description:
            entry["description"] = self.description
        return entry

    def match(self, uri):
        """The parameter values for `uri`, or None if it is not this resource's."""
        if self.pattern is None:
            return {} if uri == self.uri else None
        found = self.pattern.fullmatch(uri)
        if not found:
            return None
        from urllib.parse import unquote
        return {key: unquote(value) for key, value in found.groupdict().items()}

    async def read(self, uri, values):
        """Run the command with the URI's values; return MCP contents."""
        try:
            values = {key: (confine_path(key, value, self.within[key]) if key in self.within
                            else uri_value(key, value)) for key, value in values.items()}
            argv = self.template.render(values, self.settings.allow_dash_values)
        except ToolError as exc:
            raise McpError(INVALID_PARAMS, "Cannot read %s: %s" % (uri, exc))
        async with self.settings.slots:
            result = await self.settings.run(self.runner, argv)
        check_read(uri, result, self.settings.timeout)
        broken = cut_binary(result.stdout, result.stdout_cut)
        if broken:
            raise McpError(INTERNAL_ERROR, "Reading %s failed: %s" % (uri, broken), {"uri": uri})
        block = output_content(result.stdout, uri, result.stdout_cut)
        content = {"uri": uri, "mimeType": self.mime_type}
        if block["type"] == "text":
            content["text"] = block["text"]
        else:
            content["blob"] = block.get("data") or block["resource"]["blob"]
            if block["type"] == "image":
                content["mimeType"] = block["mimeType"]
        return {"contents": [content]}


class Block:
    """`{#if name}...{#else}...{/if}` in a command template."""

    __slots__ = ("name", "key", "then", "otherwise")

    def __init__(self, name):
        self.name = name
        self.key = name.replace("-", "_")
        self.then = []
        self.otherwise = None

    def branch(self, arguments):
        value = arguments.get(self.key)
        given = value is not None and value is not False and value != "" and value != []
        return self.then if given else (self.otherwise or [])


_BLOCK = re.compile(r"\{#if\s+(%s)\s*\}|\{#else\}|\{/if\}" % _FIELD_NAME)
# What a backslash escapes outside quotes in a config's command: a blank, and a character the template
# or a shell gives a meaning. Before any other character it is kept, as in a command-line template, so
# Windows paths survive: C:\Tools\app.exe is itself, C:\Users\\{user} puts a field after the last backslash.
_SHELL_ESCAPABLE = _ESCAPABLE + "'\"$`|&;<>()*?!#~"


class CommandTemplate(Template):
    """A config file's command template: one string, split into words like a shell would.

    Grammar (fields and blocks are found before the words are split)::

        template ::= node*
        node     ::= block | field | flag | group | quote | space | char
        block    ::= '{#if' NAME '}' node* [ '{#else}' node* ] '{/if}'
        quote    ::= "'" ... "'" | '"' ... '"'   (fields still work inside quotes)
        space    ::= whitespace outside quotes: ends a word

    Quotes work as in a POSIX shell, and so does a backslash before a blank,
    a quote or a character a shell or the template gives a meaning (see
    _SHELL_ESCAPABLE); before any other character it is kept (C:\\Tools\\app.exe),
    as in a command-line template. No shell runs: values are never split,
    globbed or re-substituted. Inside quotes only
    `{field}` forms are fields; brackets are text there. A block keeps its
    content when its parameter is present and not false, null, "" or []; a
    quote must close in the block part it opened in. The first word (the
    command) is literal text outside any block. With `text=True` (stdin
    templates) quotes, backslashes, spaces and brackets are plain text.

    Tokens are (kind, value, quote, raw): "t" text, "s" space, "q" a quote
    mark, "f" a Field, "g" a Group; `quote` is the quoting around it ("$"
    inside a $( ) or `...` substitution) and `raw` its source text, which is
    what a `"shell": true` script keeps.
    """

    def __init__(self, source, text=False, shell=False):
        self.source = [source]
        self.text_mode = text
        self.fields = {}
        self.blocks = []
        self.substituted = []  # fields written inside $( ) or backticks
        self.nodes = self._parse(source)
        self.stdin_code = ""  # why a program here would take stdin as code or arguments
        if not text:
            self._check_command_word()
            if not shell:  # a "shell": true script is walked command by command (check_code(shell=True))
                self.check_code(shell=False)

    def _block_choices(self):
        """Arguments that take each combination of block branches (all of them, up to 2**10)."""
        keys = sorted({block.key for block in self.blocks})
        if len(keys) > 10:
            yield from ({}, {key: True for key in keys})
            return
        for mask in range(1 << len(keys)):
            yield {key: True for bit, key in enumerate(keys) if mask >> bit & 1}

    def check_code(self, shell):
        """Refuse a field where a value would be code (see _CodeCheck), in every way the
        blocks can go; `shell` walks each command of a "shell": true script."""
        try:
            for arguments in self._block_choices():
                if shell:
                    found = check_code_fields(None, list(self._tokens(self.nodes, arguments)))
                else:
                    found = check_code_fields(self.words_for(arguments))
                self.stdin_code = self.stdin_code or found
        except TemplateError as exc:
            raise self._error(str(exc))

    def _error(self, message, at=None) -> TemplateError:
        where = " at column %d" % (at + 1) if at is not None else ""
        return TemplateError("%s%s of %r" % (message, where, self.source[0]))

    def _parse(self, source):
        root, stack, quote, subst, i = [], [], None, [], 0
        current = root
        while i < len(source):
            char = source[i]
            state = quote if not subst else "$"
            if char == "{" and source.startswith(("{#", "{/"), i):
                match = _BLOCK.match(source, i)
                if not match:
                    raise self._error("malformed block: use {#if name}, {#else} or {/if}", i)
                if match.group(1):
                    block = Block(match.group(1))
                    self.blocks.append(block)
                    current.append(block)
                    stack.append((block, current, (quote, len(subst))))
                    current = block.then
                elif not stack:
                    raise self._error("%s has no {#if} before it" % match.group(), i)
                else:
                    if stack[-1][2] != (quote, len(subst)):
                        raise self._error("a quote or $( ) opened in a block part must close in it, "
                                          "before %s" % match.group(), i)
                    if match.group() == "{#else}":
                        block = stack[-1][0]
                        if block.otherwise is not None:
                            raise self._error("a second {#else}", i)
                        block.otherwise = current = []
                    else:
                        current = stack.pop()[1]
                i = match.end()
                continue
            if not self.text_mode:
                if char == "\\" and quote != "'" and i + 1 < len(source):
                    following = source[i + 1]
                    if following in ('"\\$`' if quote else _SHELL_ESCAPABLE) or (quote is None and following.isspace()):
                        current.append(("t", following, state, source[i:i + 2]))
                        i += 2
                        continue
                if char in "'\"" and quote in (None, char) and not subst:
                    quote = None if quote else char
                    current.append(("q", char, quote, char))
                    i += 1
                    continue
                if quote != "'":  # command substitution: $( ), $(( )), `...`
                    if source.startswith("$(", i):
                        current.append(("t", "$", state, "$"))
                        i += 1
                        char = "("
                    if char == "(" and (subst and subst[-1] == ")" or source[i - 1:i] == "$"):
                        subst.append(")")
                    elif char == ")" and subst and subst[-1] == ")":
                        subst.pop()
                    elif char == "`":
                        subst.pop() if subst and subst[-1] == "`" else subst.append("`")
                if char.isspace() and quote is None and not subst:
                    current.append(("s", char, None, char))
                    i += 1
                    continue
            if char == "{" or (char == "[" and quote is None and not self.text_mode):
                piece, end = self._piece_at(source, i, 0, bool(stack), lambda message, at=i: self._error(message, at))
                if piece:
                    is_field = isinstance(piece, Field)
                    if subst:
                        self.substituted.extend([piece.name] if is_field else [f.name for f in piece.fields])
                    current.append(("f" if is_field else "g", piece, state, source[i:end]))
                    i = end
                    continue
            current.append(("t", char, state, char))
            i += 1
        if quote:
            raise self._error("a %s quote is never closed" % quote)
        if subst:
            raise self._error("a $( or ` is never closed")
        if stack:
            raise self._error("{#if %s} is never closed with {/if}" % stack[-1][0].name)
        return root

    def _check_command_word(self):
        """The command a call runs must be written out, never chosen by a value or a block."""
        nodes = list(self.nodes)
        while nodes and not isinstance(nodes[0], Block) and nodes[0][0] == "s":
            nodes.pop(0)
        if not nodes:
            raise self._error("the command template has no command")
        for node in nodes:
            if isinstance(node, Block) or node[0] in "fg":
                raise self._error("the command (the first word) must be literal text outside any block")
            if node[0] == "s":
                return

    def _tokens(self, nodes, arguments=None):
        """The tokens in order; blocks are entered by `arguments` (all of them when None)."""
        for node in nodes:
            if isinstance(node, Block):
                if arguments is None:
                    yield from self._tokens(node.then)
                    yield from self._tokens(node.otherwise or [])
                else:
                    yield from self._tokens(node.branch(arguments), arguments)
            else:
                yield node

    def _token_words(self, arguments):
        """The chosen tokens split at spaces: a list of (word tokens, following spaces)."""
        words, word, spaces = [], [], ""
        for token in self._tokens(self.nodes, arguments):
            if token[0] == "s":
                spaces += token[3]
                continue
            if spaces and word:
                words.append((word, spaces))
                word = []
            elif spaces and words:
                words[-1] = (words[-1][0], words[-1][1] + spaces)
            spaces = ""
            word.append(token)
        if word:
            words.append((word, spaces))
        return words

    def literal_words(self):
        """Each word's text as written, quote marks and fields left out: where a `{name` no `}` closes in
        its word is literal text (see unclosed_warning). A field's description (`{repo # path of the
        repository}`) and a quoted program (`awk '{print $1}'`) are one word each."""
        return ["".join(raw for kind, _, _, raw in word if kind == "t") for word, _ in self._token_words(None)]

    def words_for(self, arguments):
        """Split the chosen tokens into words of pieces (str, Field, Group)."""
        words = []
        for tokens, _ in self._token_words(arguments):
            word = []
            for value in self.words_for_tokens(tokens):  # an empty quoted word ('') is still a word
                if isinstance(value, str) and word and isinstance(word[-1], str):
                    word[-1] += value
                else:
                    word.append(value)
            words.append(word)
        return words

    @property
    def words(self):
        """The template's words, as `words_for(None)` gives them (for checks and display)."""
        return self.words_for(None)

    def occurrences(self):
        """Every field as written, in groups and in both branches of every block."""
        for kind, value, _, _ in self._tokens(self.nodes):
            if kind == "f":
                yield value
            elif kind == "g":
                yield from value.fields

    def render(self, arguments, allow_dash_values=False, shell=False):
        """See Template.render; `shell` reads the words as a "shell": true script, where a `--`
        ends the options of its own command only (up to `|`, `&`, `;`, `(`, `)` or a newline)."""
        ends = set()
        if shell:
            for index, (tokens, spaces) in enumerate(self._token_words(arguments)):
                if "\n" in spaces or any(kind == "t" and quote is None and raw == value and value in "|&;()"
                                         for kind, value, quote, raw in tokens):
                    ends.add(index)
        return render_words(self.words_for(arguments), arguments, allow_dash_values, ends)

    def render_text(self, arguments):
        """The template as one string (stdin templates): values pasted in as text."""
        parts = []
        for _, value, _, _ in self._tokens(self.nodes, arguments):
            _render_pieces([value], arguments, parts)  # text, a field, or a group (kept if all its fields are given)
        return "".join(parts)

    def render_shell(self, arguments):
        """(script, values) for `sh -c script mcpstudio values...`.

        The script is the template's own source text, word by word (a word
        whose value is missing goes, as in argv rendering), with each value
        replaced by a positional parameter "$N" quoted to suit where it
        stands; no value is ever part of the script.
        """
        script, values = [], []

        def ref(value, quote):
            values.append(_text(value))
            name = "${%d}" % len(values)
            return {"'": "'\"%s\"'" % name, '"': name}.get(quote, '"%s"' % name)

        for tokens, spaces in self._token_words(arguments):
            if not _render_pieces(self.words_for_tokens(tokens), arguments, [])[1]:
                continue
            for kind, value, quote, raw in tokens:
                if kind in "tq":
                    script.append(raw)
                elif kind == "g":
                    if value.given(arguments):
                        parts = []
                        _render_pieces(value.pieces, arguments, parts)
                        script.append(ref("".join(parts), quote))
                else:
                    given = arguments.get(value.key)
                    if value.kind == "boolean":
                        script.append(value.flag if given else "")
                    elif value.kind == "array" and quote is None:
                        script.append(" ".join(ref(v, None) for v in given or ()))
                    elif given is not None:
                        script.append(ref(",".join(_text(v) for v in given) if value.kind == "array" else given,
                                          quote))
            script.append(spaces)
        return "".join(script), values

    def shell_syntax(self):
        """What in the template only a shell would act on (`|`, `&&`, `>`, `*`, `$(`, `$VAR`, ...).

        Without `"shell": true` no shell runs, so these reach the command as
        literal text; quoted or escaped characters are not counted.
        """
        tokens = list(self._tokens(self.nodes))
        found, doubled = [], None
        for index, (kind, value, quote, raw) in enumerate(tokens):
            if kind != "t" or raw != value or quote not in (None, '"') or index == doubled:
                continue
            after = tokens[index + 1] if index + 1 < len(tokens) else None
            following = after[1] if after and after[0] == "t" else ""
            if value == "`":
                thing = "`...`"
            elif value == "$" and following == "(":
                thing = "$(...)"
            elif value == "$" and (following[:1].isalpha() or following in ("_", "{") or (after and after[0] == "f")):
                thing = "$VARIABLE"
            elif quote is not None:
                continue
            elif value in "|&;<>":
                thing = value * 2 if following == value else value
                doubled = index + 1 if following == value else None
            elif value == "*":
                thing = "*"
            elif value == "~" and (index == 0 or tokens[index - 1][0] == "s"):
                thing = "~"
            else:
                continue
            if thing not in found:
                found.append(thing)
        return found

    @staticmethod
    def words_for_tokens(tokens):
        """The tokens' values, quote marks dropped (what a word's text is made of)."""
        return [("" if kind == "q" else value) for kind, value, _, _ in tokens]

    def display(self):
        """The template as a person reads it, without field descriptions."""
        return self.source[0]


_SERVER_GROUPS = ("mcpServers", "servers")  # where a config keeps its MCP servers: Claude's key, and VS Code's
_NAMESPACE_KEYS = tuple(("servers tools description toolSearch overrides people serverIds denyByDefault serverDefaults id name").split())  # this line: mcp-studio's
_PERMISSION_KEYS = tuple("namespace server toolName enabled namespaceId serverId".split())
_OVERRIDE_KEYS = tuple(("name title description descriptionPrefix descriptionSuffix annotations _meta arguments").split())  # what an override of a tool may change (see CuratedTool)
_ARGUMENT_KEYS = ("name", "description", "default", "value", "hidden")


def _read_overrides(loader, entry, where):
    """The `overrides` of a server entry or a namespace: [(tool name or glob, override, "file: key")], each checked
    for what the tool's schema is not needed for (CuratedTool checks the rest when the tools are listed)."""
    found = []
    for pattern, override, here in loader.members(entry, "overrides", where):
        if not pattern:
            raise loader.error(_join(where, "overrides"), 'a tool name or glob, not ""')
        loader.keys(override, _OVERRIDE_KEYS, here)
        for key in ("name", "title", "description", "descriptionPrefix", "descriptionSuffix"):
            loader.get(override, key, str, here)
        if "name" in override and not re.fullmatch(r"[A-Za-z0-9_-]{1,128}", override["name"]):
            raise loader.error(_join(here, "name"), "use 1 to 128 of A-Z a-z 0-9 _ - (what every client accepts in a "
                                                    "tool name), not %s" % json.dumps(override["name"]))
        for key in ("annotations", "_meta", "arguments"):
            loader.get(override, key, dict, here)
        loader.keys(override.get("annotations", {}), _ANNOTATIONS, _join(here, "annotations"))  # as a tool's own
        names = {}
        for argument, change, there in loader.members(override, "arguments", here):
            loader.keys(change, _ARGUMENT_KEYS, there)
            for key, kind in (("name", str), ("description", str), ("hidden", bool)):
                loader.get(change, key, kind, there)
            if "value" in change and any(key in change for key in ("name", "description", "default")):
                raise loader.error(there, "an argument with a `value` is fixed and hidden from the model: it takes "
                                          "no `name`, `description` or `default`")
            if "name" in change:
                if not change["name"]:
                    raise loader.error(_join(there, "name"), "expected a name, not \"\"")
                if change["name"] in names:
                    raise loader.error(_join(there, "name"), "`%s` is also the new name of `%s`" % (
                        change["name"], names[change["name"]]))
                names[change["name"]] = argument
        found.append((pattern, override, "%s: %s" % (loader.path, here)))
    return found


START_TIMEOUT = 30.0          # seconds a server may take to start and list its tools
TOOL_TIMEOUT = 60.0           # seconds a forwarded request may take
HEALTH_INTERVAL = 30.0        # seconds between pings of an idle server; 0 turns them off
ISOLATED_MAX = 10        # instances of an isolated server at once (its `maxInstances`)
ISOLATED_IDLE = 900.0    # seconds an isolated instance may go unused before it is stopped
_PERSON_REFERENCE = re.compile(r"\$\{person\.([A-Za-z_][A-Za-z0-9_]*)\}")


def _server_id(key):
    return safe_name(key, 128)  # tool names are shortened where needed, ids only made safe


def _fingerprint(*parts):
    return _hash(json.dumps(parts, sort_keys=True, ensure_ascii=False))


class UpstreamSpec:
    """One configured server, as read from the file; `error` when the entry cannot be used."""

    # What an entry leaves out; the mutable ones are made per server in __init__.
    command = cwd = url = error = None
    transport = "stdio"
    disabled = eager = False
    startup_timeout, tool_timeout, health_interval = START_TIMEOUT, TOOL_TIMEOUT, HEALTH_INTERVAL
    max_concurrency = 0
    protocol = None  # `protocolVersion`: the era to speak, pinned (None: initialize, else discover)
    isolation, max_instances = "shared", ISOLATED_MAX  # one process for everyone, or one per person or session
    idle_timeout = ISOLATED_IDLE  # seconds a person's (or session's) own process may go unused: then it stops
    person_token = None  # `auth`: a URL server gets the signed-in person's own token ("passthrough", audience-checked)
                         # or one the identity provider gives for it in exchange ("exchange", RFC 8693)

    def __init__(self, key, where):
        self.key, self.id, self.where = key, _server_id(key), where
        self.args, self.env, self.headers = [], {}, {}
        self.allow, self.deny = [], []
        self.denied_tools = []  # mcp-studio's deniedTools: refused in every namespace
        self.prefix = self.id   # tool and prompt names are <prefix><separator><name>; "" for bare names
        self.secrets = []
        self.notes = []  # what of the entry is accepted but not used, said once at startup
        self.oauth = {}  # a URL server's `oauth` settings (see OAuthClient); None: never sign in
        self.rules = {}       # its rateLimit, cache and confirm (see Guard)
        self.overrides = []   # (tool name or glob, override, "file: key"): how its tools are shown (CuratedTool)

    def public_name(self, name, separator):
        """The name a client sees for the server's tool or prompt `name`."""
        return self.prefix + separator + name if self.prefix else name

    @property
    def launch(self):
        """What starts the server: a change here means a restart (and another cache entry)."""
        return _fingerprint(self.command, self.args, self.cwd, self.env, self.url, self.headers, self.protocol)

    @property
    def settings(self):
        """A fingerprint of everything that, changed by a reload, restarts the server."""
        return _fingerprint(self.launch, self.startup_timeout, self.tool_timeout, self.max_concurrency,
                            self.health_interval, self.allow, self.deny, self.disabled, self.error,
                            self.denied_tools, self.oauth, self.overrides, self.isolation, self.max_instances,
                            self.idle_timeout, self.person_token)

    def person_names(self):
        """The NAMEs of the `${person.NAME}` in its args, env and headers: each person's own secrets."""
        words = self.args + list(self.env.values()) + list(self.headers.values())
        return sorted({name for word in words for name in _PERSON_REFERENCE.findall(word)})

    def listed(self):
        """What the shared process runs (it lists the tools of an isolated server): no person's secrets. No person
        fills a header that names one, so it is not sent at all (never an empty `Authorization: Bearer `); a variable
        or an argument that names one is empty (a variable left out would be inherited from mcpstudio's own
        environment)."""
        return self.for_person({}, listing=True) if self.person_names() else self

    def for_person(self, secrets, listing=False):
        """A copy whose `${person.NAME}` are `secrets`' values ("" for one not in them); `listing`: the shared
        listing's copy, without the headers that name one."""
        import copy
        spec = copy.copy(self)

        def fill(word):
            return _PERSON_REFERENCE.sub(lambda found: secrets.get(found.group(1), ""), word)
        spec.args = [fill(word) for word in self.args]
        spec.env = {key: fill(value) for key, value in self.env.items()}
        spec.headers = {key: fill(value) for key, value in self.headers.items()
                        if not (listing and _PERSON_REFERENCE.search(value))}
        spec.secrets = self.secrets + [value for value in secrets.values() if value]
        spec.origin = self  # what a reload compares
        return spec

    def display(self):
        """The server as a person reads it, secrets masked: its URL, or its command line."""
        return mask_secrets(self.url or _argv_text([self.command or "?"] + self.args))


# Curation: overrides show an upstream tool under another name, description,
# annotations and arguments. They are a view over the listing: the catalog
# publishes the curated tool and a call is mapped back (arguments renamed,
# fixed values added, defaults filled in) to what the server expects.

def override_layers(overrides, name):
    """The entries of `overrides` [(name or glob, override, "file: key")] that apply to `name`, as (override,
    place, exact): globs in file order, then the entry of that exact name, so that its keys win."""
    found = [(override, place, False) for pattern, override, place in overrides
             if pattern != name and _match(name, [pattern])]
    return found + [(override, place, True) for pattern, override, place in overrides if pattern == name]


def _passes_any(names, allow, deny):
    """A tool known by several `names` passes when one of them is allowed and none is denied."""
    return (not allow or any(_match(name, allow) for name in names)) and not any(_match(name, deny) for name in names)


class UpstreamPlan:
    """The upstream part of a config: servers (in file order), namespaces and their choice."""

    def __init__(self, specs, namespaces, default, default_key, permissions=None):
        self.specs, self.namespaces, self.default, self.default_key = specs, namespaces, default, default_key
        self.permissions = permissions or {}  # (namespace, server id, tool) -> enabled: toolPermissions

    def every_server(self):
        """This plan without its namespaces: every server, whichever namespace a client picks."""
        return UpstreamPlan(self.specs, {}, None, self.default_key, self.permissions)

    def denial(self, namespace, spec, tool, names=()):
        """Why `tool` of `spec` is denied in `namespace` (None: it is allowed); `names`: its curated name too.

        mcp-studio's rules: a server's deniedTools always win; then a
        toolPermissions entry for the namespace, server and tool; then the
        namespace's serverDefaults for the server (true = deny), else its
        denyByDefault. A rule names a curated tool by either name (a
        disabling entry wins over an enabling one).
        """
        names = [tool] + [name for name in names if name != tool]
        named = next((name for name in names if name in spec.denied_tools), None)
        if named is not None:
            return "the tool `%s` is in the deniedTools of server `%s`" % (named, spec.key)
        if namespace is None:
            return None
        found = [(self.permissions[(namespace, spec.id, name)], name) for name in names
                 if (namespace, spec.id, name) in self.permissions]
        if found:
            enabled, named = min(found, key=lambda pair: pair[0])
            return None if enabled else ("toolPermissions disables the tool `%s` of server `%s` in namespace `%s`"
                                         % (named, spec.key, namespace))
        entry = self.namespaces[namespace]
        if entry["server_defaults"].get(spec.id, entry["deny_by_default"]):
            return ("namespace `%s` denies the tools of server `%s` unless toolPermissions enables them, and "
                    "none enables `%s`" % (namespace, spec.key, tool))
        return None

    def left_out(self, namespace, spec, original, separator):
        """Why `serve` leaves `spec`'s tool `original` out of `namespace`: "" for the server's or the namespace's
        allow/deny filters, a permission's reason (calls get it), or None when it is listed. A curated tool
        answers to both of its names: a filter that lets either in lets it in, one that keeps either out
        keeps it out."""
        entry = self.namespaces.get(namespace)
        public = spec.public_name(original, separator)
        curated = self.curation(namespace, spec, original, separator)[1] if spec.overrides or (
            entry and entry.get("overrides")) else public
        own = curated[len(spec.prefix + separator):] if spec.prefix and curated.startswith(spec.prefix + separator) \
            else curated  # the curated name as a server's rules name its tools: without its prefix
        if not _passes_any({original, own}, spec.allow, spec.deny) or (
                entry and not _passes_any({public, curated}, entry["allow"], entry["deny"])):
            return ""
        return self.denial(namespace, spec, original, (own,))

    def curation(self, namespace, spec, original, separator):
        """([(override, "file: key", exact)], public name) of `spec`'s tool `original` in `namespace`: the server
        entry's overrides that match it (globs in file order, then its own name), then the namespace's that
        match the public name the server's give it; a later one's keys win. `name` renames what its key
        names: in a server entry the tool (its prefix stays), in a namespace the public name."""
        layers = override_layers(spec.overrides, original)
        own = next((override["name"] for override, _, _ in reversed(layers) if "name" in override), original)
        public = spec.public_name(own, separator)
        entry = self.namespaces.get(namespace) or {}
        more = override_layers(entry.get("overrides") or (), public)
        return layers + more, next((override["name"] for override, _, _ in reversed(more) if "name" in override), public)


def _keyed_list(loader, items, where):
    """mcp-studio's early list form ([{"id": ..., ...}]) as the object form keyed by id."""
    out = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise loader.error("%s[%d]" % (where, index), "expected an object with an \"id\"")
        out[item["id"]] = item
    return out


_FILTER_KEYS = ("allow", "deny")


def _read_filter(loader, entry, where):
    tools = loader.get(entry, "tools", dict, where, {})
    loader.keys(tools, _FILTER_KEYS, _join(where, "tools"))
    return tuple(loader.strings(tools, key, _join(where, "tools"), "expected a list of glob patterns (strings)", [])
                 for key in _FILTER_KEYS)


_SERVER_KEYS = tuple(("command args cwd env type url headers disabled eager startupTimeout toolTimeout maxConcurrency "
                      "tools healthCheckInterval prefix protocolVersion rateLimit cache confirm isolation maxInstances "
                      "idleTimeout auth "
                      # mcp-studio's (mcpmu's) names for the same things, and its deny list
                      "kind enabled autostart http_headers env_http_headers bearer_token_env_var startup_timeout_sec "
                      "tool_timeout_sec deniedTools id name overrides").split())
ISOLATION_MODES = ("shared", "user", "session")  # a server's `isolation`
PERSON_TOKEN_MODES = ("passthrough", "exchange")  # a URL server's `auth`: the person's own token, or one exchanged for it
_OAUTH_KEYS = tuple("oauth scopes oauth_client_id oauthEnabled oauthClientId oauthScopes".split())
OAUTH_KEYS = {"clientId": str, "clientSecret": str, "scopes": (str, list), "callbackPort": int,  # a config's `oauth`,
              "clientMetadataUrl": str, "browser": bool}                                        # what each holds
_OAUTH_ALIASES = {"client_id": "clientId", "client_secret": "clientSecret", "callback_port": "callbackPort",
                  "client_metadata_url": "clientMetadataUrl"}


def _read_oauth(loader, spec: UpstreamSpec, entry, where):
    """The `oauth` block of a URL server (and other clients' names for its parts); `false` turns sign-in off."""
    given = [key for key in _OAUTH_KEYS if key in entry]
    if spec.url is None:
        if given:
            spec.notes.append("%s: `%s` is not used: only a server with a `url` signs in" % (where, given[0]))
        return
    block = entry.get("oauth", {})
    if block is False or entry.get("oauthEnabled") is False:
        spec.oauth = None
        return
    if not isinstance(block, dict):
        raise loader.error(_join(where, "oauth"), "expected an object (clientId, clientSecret, scopes, callbackPort, "
                                                  "clientMetadataUrl, browser) or false, not %s" % _type_name(block))
    block = {_OAUTH_ALIASES.get(key, key): value for key, value in block.items()}  # client_id: mcp-studio's spelling
    for key in block:
        if key not in OAUTH_KEYS:
            close = _close_match(key, OAUTH_KEYS)
            raise loader.error(_join(where, "oauth.%s" % key), "unknown key%s; known: %s" % (
                " (did you mean `%s`?)" % close if close else "", ", ".join(OAUTH_KEYS)))
    settings = {}
    for key, kinds in OAUTH_KEYS.items():
        value = loader.get(block, key, kinds, _join(where, "oauth"))
        if value is not None:
            settings[key] = loader.expand(value, _join(where, "oauth.%s" % key)) if isinstance(value, str) else value
    for key, target in (("oauth_client_id", "clientId"), ("oauthClientId", "clientId"), ("oauthScopes", "scopes"),
                        ("scopes", "scopes")):
        if key in entry and target not in settings:
            settings[target] = entry[key]
    if isinstance(settings.get("scopes"), list) and not all(isinstance(x, str) for x in settings["scopes"]):
        raise loader.error(_join(where, "oauth.scopes"), "expected a list of scope names or one string of them")
    if not 0 <= settings.get("callbackPort", 0) < 65536:
        raise loader.error(_join(where, "oauth.callbackPort"), "expected a port number (1-65535)")
    if settings.get("clientSecret"):
        spec.secrets.append(settings["clientSecret"])
    spec.oauth = settings


def _read_headers(loader, spec: UpstreamSpec, entry, where):
    """`headers` (${VAR} expanded), and mcp-studio's http_headers, env_http_headers (header -> variable) and
    bearer_token_env_var: kept as secrets (Authorization and API keys, above all)."""
    headers = dict(loader.get(entry, "http_headers", dict, where, {}))
    for header, variable, here in loader.members(entry, "env_http_headers", where):
        if not isinstance(variable, str) or not variable:
            raise loader.error(here, "expected the name of an environment variable")
        if loader.environ.get(variable) is None:
            raise loader.error(here, "the variable %s is not set; set it in the environment mcpstudio starts in"
                               % variable)
        headers[header] = loader.environ[variable]
    variable = loader.get(entry, "bearer_token_env_var", str, where)
    if variable is not None:
        here = _join(where, "bearer_token_env_var")
        if not loader.environ.get(variable):
            raise loader.error(here, "the variable %s is not set; set it to the token in the environment "
                               "mcpstudio starts in" % variable)
        headers["Authorization"] = "Bearer " + loader.environ[variable]
    for group, found in (("headers", loader.get(entry, "headers", dict, where, {})), ("http_headers", headers)):
        for key, value in found.items():
            here = _join(where, "%s.%s" % (group, key))
            if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", key) or not isinstance(value, str) or "\n" in value:
                raise loader.error(here, "expected a header name and a one-line string value")
            spec.headers[key] = loader.expand(value, here) if group == "headers" else value
            spec.secrets.append(spec.headers[key])


def _read_server(loader, spec: UpstreamSpec, entry, where, base_timeout):
    if not isinstance(entry, dict):
        raise loader.error(where, "expected an object with `command` (and `args`, `env`, `cwd`), not %s"
                           % _type_name(entry))
    for key in entry:  # keys of other clients (autoApprove, timeout, ...) are accepted as they are
        if key not in _SERVER_KEYS and key not in _OAUTH_KEYS:
            close = _close_match(key, _SERVER_KEYS, 0.8)
            if close:
                raise loader.error(_join(where, key), "unknown key (did you mean `%s`?)" % close)
    spec.disabled = loader.get(entry, "disabled", bool, where, False) or not loader.get(entry, "enabled", bool, where, True)
    spec.rules = read_rules(loader, entry, where)
    spec.eager = loader.get(entry, "eager", bool, where, False) or loader.get(entry, "autostart", bool, where, False)
    spec.prefix = loader.get(entry, "prefix", str, where, spec.id)
    if "prefix" in entry and not re.fullmatch(r"[A-Za-z0-9_-]{0,32}", spec.prefix):
        raise loader.error(_join(where, "prefix"), "use up to 32 of A-Z a-z 0-9 _ - (a short prefix for the "
                                                   "server's tool names; \"\" for none), not %s" % json.dumps(spec.prefix))
    kind_key = "type" if "type" in entry or "kind" not in entry else "kind"  # `kind` is mcp-studio's name
    kind = loader.get(entry, kind_key, str, where, "")
    http_kinds = ("", "http", "sse", "streamable-http", "streamableHttp", "streamable_http")
    if "url" in entry or kind in http_kinds[1:]:
        if kind not in http_kinds:
            raise loader.error(_join(where, kind_key), "expected \"http\" or \"sse\" with a `url`, not %s" % json.dumps(kind))
        spec.transport = "sse" if kind == "sse" else "http"
        if "url" not in entry:
            raise loader.error(where, "a %s server needs a `url`" % spec.transport)
        spec.url = loader.expand(loader.get(entry, "url", str, where), _join(where, "url"))
        if not re.match(r"https?://[^/?#]+", spec.url):
            raise loader.error(_join(where, "url"), "expected an http:// or https:// URL, not %s" % json.dumps(spec.url))
        _read_headers(loader, spec, entry, where)
    elif kind not in ("", "stdio"):
        raise loader.error(_join(where, kind_key), "expected \"stdio\" (or \"http\"/\"sse\" with a `url`), not %s"
                           % json.dumps(kind))
    else:
        for key in ("http_headers", "env_http_headers", "bearer_token_env_var"):
            if key in entry:
                raise loader.error(_join(where, key), "only a server with a `url` sends HTTP headers")
        if "command" not in entry:
            raise loader.error(where, "a server needs a `command` (the program that starts it) or a `url`")
        spec.command = loader.expand(loader.get(entry, "command", str, where), _join(where, "command"))
        if not spec.command.strip():
            raise loader.error(_join(where, "command"), "is empty")
    for index, arg in enumerate(loader.get(entry, "args", list, where, [])):
        spec.args.append(loader.text(arg, _join(where, "args[%d]" % index)))
    problem = None if spec.url else exec_problem([spec.command] + spec.args, cwd=entry.get("cwd"), batch=False)
    if problem is not None:  # reported by check and status too, not only when the server is started
        raise loader.error(where, problem)
    if "cwd" in entry:
        spec.cwd = loader.folder_path(loader.get(entry, "cwd", str, where), _join(where, "cwd"))
    spec.env = loader.environment(entry, where, "env")
    spec.secrets.extend(v for k, v in spec.env.items() if looks_secret(k))  # tokens are often written in clear
    for key, attr in (("startupTimeout", "startup_timeout"), ("toolTimeout", "tool_timeout"),
                      ("healthCheckInterval", "health_interval")):
        if key not in entry and attr + "_sec" in entry:  # mcp-studio's startup_timeout_sec, tool_timeout_sec
            key = attr + "_sec"
        value = loader.get(entry, key, NUMBER, where)
        if value is not None:
            if not 0 <= value < 1e9 or (value == 0 and key != "healthCheckInterval"):
                raise loader.error(_join(where, key), "expected a positive number of seconds")
            setattr(spec, attr, float(value))
        elif key == "toolTimeout" and base_timeout:
            spec.tool_timeout = base_timeout
    spec.protocol = loader.get(entry, "protocolVersion", str, where)
    if spec.protocol is not None and spec.protocol not in MODERN_VERSIONS + PROTOCOL_VERSIONS:
        raise loader.error(_join(where, "protocolVersion"), "expected one of %s (or leave it out: mcpstudio then "
                           "tries initialize, and server/discover when refused), not %s"
                           % (", ".join(MODERN_VERSIONS + PROTOCOL_VERSIONS), json.dumps(spec.protocol)))
    spec.max_concurrency = loader.get(entry, "maxConcurrency", int, where, 0)
    if spec.max_concurrency < 0:
        raise loader.error(_join(where, "maxConcurrency"), "expected a positive whole number (0: no limit)")
    spec.person_token = loader.choice(entry, "auth", PERSON_TOKEN_MODES, where, None)
    if spec.person_token and not spec.url:
        raise loader.error(_join(where, "auth"), "only a server with a `url` takes a person's token")
    if spec.person_token and entry.get("isolation") == "shared":
        raise loader.error(_join(where, "isolation"), "\"auth\": \"%s\" talks to the server as each person "
                           "(with their own token): use \"user\" or \"session\", or leave it out (\"user\")"
                           % spec.person_token)
    spec.isolation = loader.choice(entry, "isolation", ISOLATION_MODES, where, "user" if spec.person_token else "shared")
    spec.max_instances = loader.get(entry, "maxInstances", int, where, ISOLATED_MAX)
    if spec.max_instances < 1:
        raise loader.error(_join(where, "maxInstances"), "expected a positive whole number (instances at once)")
    spec.idle_timeout = float(loader.get(entry, "idleTimeout", NUMBER, where, ISOLATED_IDLE))
    if not 0 < spec.idle_timeout < 1e9:
        raise loader.error(_join(where, "idleTimeout"), "expected a positive number of seconds")
    if spec.isolation == "shared" and spec.person_names():
        raise loader.error(where, "${person.%s} is a signed-in person's own secret: set \"isolation\": \"user\" "
                           "(or \"session\"), so that each person's server gets theirs" % spec.person_names()[0])
    spec.allow, spec.deny = _read_filter(loader, entry, where)
    spec.denied_tools = loader.strings(entry, "deniedTools", where, "expected a list of tool names (strings)", [])
    spec.overrides = _read_overrides(loader, entry, where)
    _read_oauth(loader, spec, entry, where)


def read_upstreams(loader, data, base_timeout) -> UpstreamPlan:
    """The `mcpServers`, `servers`, `namespaces` and `defaultNamespace` keys of a config.

    A mistake inside one server entry makes that server unusable (`spec.error`,
    shown by status, check and servers_list) and leaves the others running;
    mistakes that touch several (ids that collide, namespaces) stop startup.
    """
    specs, by_id = [], {}
    for group in _SERVER_GROUPS:
        for key, entry in loader.get(data, group, dict, "", {}).items():
            where = "%s.%s" % (group, key)
            spec = UpstreamSpec(key, where)
            try:
                _read_server(loader, spec, entry, where, base_timeout)
            except ConfigError as exc:
                spec.error = str(exc)
            if spec.id in by_id:
                raise loader.error(where, "its id `%s` is also the id of %s (ids are the keys with characters "
                                          "other than A-Z a-z 0-9 _ - made _); rename one of them"
                                   % (spec.id, by_id[spec.id].where))
            by_id[spec.id] = spec
            specs.append(spec)

    def server_id(member, here):
        if not isinstance(member, str):
            raise loader.error(here, "expected a server key (a string)")
        spec = next((s for s in specs if member in (s.key, s.id)), None)
        if not spec:
            close = _close_match(member, [s.key for s in specs])
            raise loader.error(here, "no server %s is configured%s" % (json.dumps(member), (
                " (did you mean %s?)" % json.dumps(close)) if close else
                " (configured: %s)" % (", ".join(s.key for s in specs) or "none")))
        return spec.id

    namespaces = {}
    found = data.get("namespaces", {})
    if isinstance(found, list):  # mcp-studio's first format: a list of {"id", "name", "serverIds"}
        found = _keyed_list(loader, found, "namespaces")
    elif not isinstance(found, dict):
        loader.get(data, "namespaces", dict, "")
    for name, entry in found.items():
        where = "namespaces.%s" % name
        if not name:  # no --namespace, URL or default can name it
            raise loader.error("namespaces", 'a namespace needs a name, not "" (e.g. "work")')
        if isinstance(entry, list):
            entry = {"servers": entry}
        loader.keys(entry, _NAMESPACE_KEYS, where)
        key = "serverIds" if "serverIds" in entry else "servers"
        ids = [server_id(member, "%s.%s[%d]" % (where, key, index))
               for index, member in enumerate(loader.get(entry, key, list, where, []))]
        defaults = {}
        for member, deny, here in loader.members(entry, "serverDefaults", where):
            if not isinstance(deny, bool):
                raise loader.error(here, "expected true (deny the server's tools by default) or false")
            defaults[server_id(member, here)] = deny
        allow, deny = _read_filter(loader, entry, where)
        people = loader.strings(entry, "people", where, "expected a list of who may use it: subjects, emails, "
                                "\"group:NAME\", \"scope:NAME\" or \"*\"", blank=False)
        namespaces[name] = {"servers": ids, "allow": allow, "deny": deny, "people": people,
                            "description": loader.get(entry, "description", str, where, ""),
                            "deny_by_default": loader.get(entry, "denyByDefault", bool, where, False),
                            "tool_search": loader.choice(entry, "toolSearch", TOOL_SEARCH_MODES, where),
                            "server_defaults": defaults, "overrides": _read_overrides(loader, entry, where)}
    permissions = {}
    for index, entry in enumerate(loader.get(data, "toolPermissions", list, "", [])):
        where = "toolPermissions[%d]" % index
        loader.keys(entry, _PERMISSION_KEYS, where)
        values = {}
        for key, old in (("namespace", "namespaceId"), ("server", "serverId"), ("toolName", None)):
            values[key] = loader.get(entry, key if key in entry or old is None else old, str, where)
            if values[key] is None:
                raise loader.error(where, "a tool permission needs `namespace`, `server`, `toolName` and `enabled`")
        if values["namespace"] not in namespaces:
            raise loader.error(_join(where, "namespace"), "no namespace %s is configured (configured: %s)"
                               % (json.dumps(values["namespace"]), ", ".join(namespaces) or "none"))
        enabled = loader.get(entry, "enabled", bool, where)
        if enabled is None:
            raise loader.error(where, "a tool permission needs `enabled`: true or false")
        permissions[(values["namespace"], server_id(values["server"], _join(where, "server")), values["toolName"])] = enabled
    default_key = "defaultNamespace" if "defaultNamespace" in data else "defaultNamespaceId"
    return UpstreamPlan(specs, namespaces, loader.get(data, default_key, str, ""), default_key, permissions)


class ConfigLoader:
    """Reads one config file into sources; every error names the file and the place."""

    def __init__(self, path, environ=None, data=None):
        self.path = os.path.abspath(os.path.expanduser(path)) if data is None else path
        self.folder = os.path.dirname(self.path) if data is None else os.getcwd()
        self.environ = os.environ if environ is None else environ
        self.secrets = []  # expanded environment values, masked in logs
        self.data = data  # a config made on the command line (--url), `path` its name in messages
        self.problems = ConfigProblems(self.path)  # what load() found: it tells them all at once

    def error(self, where, message) -> ConfigError:
        """A ConfigError that names the file and the key path `where`."""
        return ConfigError("%s: %s: %s" % (self.path, where, message) if where else "%s: %s" % (self.path, message))

    def read(self):
        """The file as a dict (JSON with comments and trailing commas allowed)."""
        if self.data is not None:
            return json.loads(json.dumps(self.data))
        try:
            with open(self.path, encoding="utf-8-sig") as f:
                text = f.read()
        except FileNotFoundError:
            raise self.error("", "no such file (create one with: mcpstudio init NAME --command CMD -o %s)" % self.path)
        except (OSError, UnicodeDecodeError) as exc:
            raise self.error("", "cannot read it: %s" % exc)
        def no_duplicates(pairs):
            seen = {}
            for key, value in pairs:
                if key in seen:
                    raise ValueError("the key %s appears twice in one object" % json.dumps(key))
                seen[key] = value
            return seen
        try:
            data = json.loads(strip_json_comments(text), object_pairs_hook=no_duplicates)
        except json.JSONDecodeError as exc:
            raise ConfigError("%s:%d:%d: invalid JSON: %s" % (self.path, exc.lineno, exc.colno, exc.msg))
        except ValueError as exc:
            raise self.error("", exc)
        except RecursionError:
            raise self.error("", "invalid JSON: nested too deeply") from None
        if not isinstance(data, dict):
            raise self.error("", "the file must hold a JSON object ({...}), not %s" % _type_name(data))
        return data

    # -- checks ---------------------------------------------------------------

    def keys(self, obj, allowed, where):
        """Refuse keys outside `allowed`, with a did-you-mean hint."""
        if not isinstance(obj, dict):
            raise self.error(where, "expected an object, not %s" % _type_name(obj))
        unknown = []
        for key in obj:
            if key not in allowed:
                close = _close_match(key, allowed)
                hint = " (did you mean `%s`?)" % close if close else " (known keys: %s)" % ", ".join(allowed)
                unknown.append(self.error(_join(where, key), "unknown key%s" % hint))
        if unknown:  # the first is raised; load() tells the others too (`more`)
            unknown[0].more = [str(exc) for exc in unknown[1:]]
            raise unknown[0]

    def get(self, obj, key, kind, where, default=None):
        """obj[key] checked against `kind` (a type or tuple of types)."""
        if key not in obj:
            return default
        value = obj[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
            names = {str: "a string", bool: "true or false", int: "a number", float: "a number",
                     list: "a list", dict: "an object"}
            expected = " or ".join(sorted({names[k] for k in _as_tuple(kind)}))
            raise self.error(_join(where, key), "expected %s, not %s" % (expected, json.dumps(value)[:60]))
        return value

    def members(self, obj, key, where):
        """(name, value, its key path) of each member of the object obj[key]; none when it is not given."""
        for name, value in self.get(obj, key, dict, where, {}).items():
            yield name, value, _join(where, "%s.%s" % (key, name))

    def strings(self, obj, key, where, expected, default=None, blank=True):
        """obj[key] (`default` when it is not given) checked to be a list of strings, with `blank` False
        of non-empty ones; else a ConfigError that says what is `expected`."""
        value = self.get(obj, key, list, where, default)
        if value and not all(isinstance(item, str) and (blank or item) for item in value):
            raise self.error(_join(where, key), expected)
        return value

    def expand(self, value, where):
        """Expand ${VAR}, ${VAR:-default}, ${ENV:VAR}, ${env:VAR}; $$ is a dollar."""
        def substitute(match):
            if match.group() == "$$":
                return "$"
            name, operator, default = match.group(1), match.group(2), match.group(3)
            value = self.environ.get(name)
            if value is not None and (value != "" or operator != ":-"):
                if looks_secret(name):  # ${GITHUB_TOKEN} yes; ${HOME} stays readable
                    self.secrets.append(value)
                return value
            if operator is not None:
                return self.expand(default, where)  # ${X:-fallback} and ${X-fallback}; the default may use ${Y}
            raise self.error(where, "${%s} is not set; set it, or give a default: ${%s:-value}" % (name, name))
        return _ENV_REFERENCE.sub(substitute, value)

    def text(self, value, where):
        """A string (a number as its text) with ${VAR} expanded."""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise self.error(where, "expected a string")
        return self.expand(str(value), where)

    def folder_path(self, value, where):
        """A folder path from the config, relative to the config file's folder."""
        path = os.path.normpath(os.path.join(self.folder, os.path.expanduser(self.expand(value, where))))
        if os.path.isfile(path):  # a SKILL.md or a script given for its folder
            raise self.error(where, "%s is a file, not a folder: give the folder that holds it (%s)"
                             % (path, os.path.dirname(path)))
        if not os.path.isdir(path):
            raise self.error(where, "no such folder: %s" % path)
        return path

    def environment(self, obj, where, key="environment"):
        """obj[key] as variables: names checked, values strings with ${VAR} expanded."""
        out = {}
        for name, value, here in self.members(obj, key, where):
            if not name or "=" in name or "\0" in name:
                raise self.error(here, "not a usable variable name (empty, or holds = or a NUL)")
            out[name] = self.text(value, here)
            if looks_secret(name):
                self.secrets.append(out[name])
            if "\0" in out[name]:
                raise self.error(here, "a value cannot hold a NUL character")
        return out

    # -- the file -----------------------------------------------------------------

    def load(self, runner: ProcessRunner, log: Log, base: RunSettings, separator=None,
             script_options=None, skill_prompts=True):
        """Return (sources, info): info has the file's name, description and instructions.

        `script_options` (help_timeout, rescan) apply to the file's script folders;
        `skill_prompts` False keeps its skills from being offered as prompts too.
        Every problem of the file is told in one ConfigError: each entry is read on past another's mistake.
        """
        self.problems = ConfigProblems(self.path)
        return self.problems.all_of(self._load, runner, log, base, separator, script_options, skill_prompts)

    def _load(self, runner, log, base, separator, script_options, skill_prompts):
        data = _given(self.read())
        gathered = self.problems.gathered

        def entries(key):
            """The file's list `key`: [] when it is not given, or (a mistake kept) not a list."""
            return gathered(self.get, data, key, list, "", [], default=[])
        gathered(self.keys, data, _TOP_KEYS + _UPSTREAM_KEYS + _BOOKKEEPING_KEYS, "")
        gathered(self.get, data, "schemaVersion", int, "")
        info = {key: gathered(self.get, data, key, str, "") for key in ("name", "description", "instructions", "command")}
        file_env = gathered(self.environment, data, "", default={})
        env = dict(base.env or os.environ, **file_env) if file_env else base.env
        cwd = base.cwd
        if "working_directory" in data:
            cwd = gathered(lambda: self.folder_path(self.get(data, "working_directory", str, ""), "working_directory"),
                           default=cwd)
        timeout = gathered(self.timeout, data, "")
        settings = base.derive(env=env, cwd=cwd, timeout=timeout or base.timeout or CONFIG_TIMEOUT,
                               task_support=gathered(self.choice, data, "taskSupport", TASK_SUPPORT, "",
                                                     base.task_support, default=base.task_support),
                               max_text=gathered(read_max_text, self, data, "", base.max_text, default=base.max_text))
        tools, names = [], {}  # one cap on running commands, above
        for index, spec in enumerate(entries("tools")):
            tool = gathered(self.tool, spec, "tools[%d]" % index, runner, settings)
            if tool is not None and tool.name in names:
                self.problems.add(self.error("tools[%d].name" % index, "`%s` is already the name of tools[%d]"
                                             % (tool.name, names[tool.name])))
            elif tool is not None:
                names[tool.name] = index
                tools.append(tool)
        resources = [resource for resource in (
            gathered(self.resource, spec, "resources[%d]" % i, runner, settings)
            for i, spec in enumerate(entries("resources")))
            if resource is not None]
        self.warn_commands(tools, resources, log)
        sources = []
        if tools or resources:
            sources.append(TemplateTools(tools, resources))
        separator = separator or gathered(self.get, data, "separator", str, "", "__", default="__")
        if separator_problem(separator):
            self.problems.add(self.error("separator", separator_problem(separator)))
            separator = "__"
        for index, entry in enumerate(entries("scripts")):
            folder = gathered(read_script_folder, self, entry, "scripts[%d]" % index, runner, settings, log,
                              separator, script_options)
            if folder is not None:
                sources.append(folder)
        folders = [folder for folder in (gathered(read_skill_folder, self, root, "skills[%d]" % index) for index, root
                                         in enumerate(entries("skills")))
                   if folder is not None]
        if folders:
            prompts = gathered(self.get, data, "skillPrompts", bool, "", True, default=True) and skill_prompts
            sources.append(SkillFolders(folders, log, prompts=prompts))
        info["separator"] = separator
        info["guard"] = gathered(read_guard, self, data, default=({}, None, ()))
        info["sign_in"] = gathered(read_sign_in, self, data)  # None: no signIn, or one with a mistake
        info["tool_search"] = gathered(read_tool_search, self, data, default=(None, TOOL_SEARCH_THRESHOLD, ()))
        info["upstream"] = None
        if any(key in data for key in _UPSTREAM_KEYS):  # other MCP servers: the aggregator
            info["upstream"] = gathered(read_upstreams, self, data, timeout or base.timeout)
            gathered(self.check_exchange, info["upstream"], info["sign_in"])
        info["local_key"] = json.dumps({k: v for k, v in data.items()
                                        if k not in _UPSTREAM_KEYS + _BOOKKEEPING_KEYS},
                                       sort_keys=True, default=str)
        return sources, info

    def check_exchange(self, plan, sign_in):
        """A server of `"auth": "exchange"` needs the gateway's own client at the identity provider (RFC 8693: the
        exchange is the gateway's request, authenticated as signIn.clientId)."""
        for spec in plan.specs if plan else ():
            if spec.person_token == "exchange" and not spec.error and not (sign_in and sign_in["issuer"] and sign_in["clientId"]):
                raise self.error(_join(spec.where, "auth"), "\"exchange\" asks the identity provider of signIn for a "
                                 "token for this server in exchange for the person's own (RFC 8693), as the gateway's "
                                 "own client: set signIn.issuer, signIn.clientId and signIn.clientSecret")

    def warn_commands(self, tools, resources, log: Log):
        """What in a tool's or resource's command was likely not meant: syntax only a shell understands (`a | b`,
        `x && y`, `*.md`) where no shell runs it, or a `{name` no `}` closes (literal text, where a field was
        meant); and a tool's `answers` where no question can be seen (Windows)."""
        commands = [("tools[%d] `%s`" % (index, tool.name), tool.spec.template, tool.spec.shell,
                     "Add \"shell\": true to the tool if a shell is meant.") for index, tool in enumerate(tools)]
        commands += [("resources[%d] `%s`" % (index, resource.uri), resource.template, False,
                      "If a shell is meant, make the command sh -c '...'.") for index, resource in enumerate(resources)]
        for where, template, shell, advice in commands:
            found = [] if shell else template.shell_syntax()
            if found:
                log.warning("%s: %s: its command uses %s, which only a shell understands; no shell runs it, so `%s` "
                            "gets them as literal arguments. %s", self.path, where, ", ".join("`%s`" % f for f in found),
                            template.command_name(), advice)
        for index, tool in enumerate(tools):
            if tool.spec.interactive and tool.spec.answers and _reading is None:
                log.warning("%s: tools[%d] `%s`: its answers are never given here: this system cannot tell that a "
                            "command waits for an answer (Linux and macOS can), so its input ends at once. Pass "
                            "what it asks another way (an option such as --yes, or its environment).",
                            self.path, index, tool.name)
        for where, template, _, _ in commands:
            warning = unclosed_warning(template.literal_words())
            if warning:
                log.warning("%s: %s: its command: %s", self.path, where, warning)

    def tool(self, spec, where, runner: ProcessRunner, settings: RunSettings) -> CommandTool:
        """One `tools` entry as a CommandTool."""
        spec = _given(spec)
        if isinstance(spec, dict) and "name" not in spec:
            raise self.error(where, "a tool needs a `name`")
        self.keys(spec, _TOOL_KEYS, where)
        name = self.get(spec, "name", str, where)
        if not name or _UNSAFE_NAME_CHARS.search(name):
            raise self.error(_join(where, "name"), "%s: use letters, digits, _ and - only "
                             "(clients reject other characters)" % json.dumps(name))
        if ("command" in spec) == ("command_template" in spec):
            raise self.error(where, "give exactly one of `command` and `command_template`")
        key = "command" if "command" in spec else "command_template"
        shell = self.get(spec, "shell", bool, where, False)
        template = self.template(self.get(spec, key, str, where), _join(where, key), shell=shell)
        if shell:
            if template.substituted:
                raise self.error(_join(where, key), "`%s` stands inside $( ) or backticks, where a value cannot be "
                                 "quoted safely; pass it as its own word and let the script use it"
                                 % template.substituted[0])
            try:
                template.check_code(shell=True)
            except TemplateError as exc:
                raise self.error(_join(where, key), "bad template: %s" % exc)
        stdin = None
        if "stdin" in spec:
            stdin = self.template(self.get(spec, "stdin", str, where), _join(where, "stdin"), text=True)
            field = next(iter(stdin.occurrences()), None)
            if field and template.stdin_code:
                raise self.error(_join(where, "stdin"), "`%s` would be code or an option: %s. Give the program "
                                 "as a file or in the template, and pass values as arguments"
                                 % (field.name, template.stdin_code))
        if "parameters" in spec:
            schema, defaults, asked = self.parameters(spec["parameters"], _join(where, "parameters"))
        else:
            schema, defaults, asked = template.input_schema(), {}, {}
        output_folder = self.get(spec, "output_folder", str, where) or template.folder()
        if output_folder:  # a field of the template, not a parameter
            schema["properties"][output_folder] = {"type": "string"}
        for part, used in ((key, template), ("stdin", stdin)):
            if used:
                self.bind(used, schema["properties"], _join(where, part),
                          "parameter" if "parameters" in spec else "field")
        if output_folder:
            del schema["properties"][output_folder]
            schema["required"] = [name for name in schema.get("required", []) if name != output_folder]
        within = self.within(spec, where, schema["properties"])
        overrides = self.run_overrides(spec, where, settings)
        if "allow_dash_values" in spec:
            overrides["allow_dash_values"] = self.get(spec, "allow_dash_values", bool, where)
        annotations = self.get(spec, "annotations", dict, where, {})
        self.keys(annotations, _ANNOTATIONS, _join(where, "annotations"))
        output_format = self.get(spec, "output_format", str, where, "text")
        if output_format not in _OUTPUT_FORMATS:
            raise self.error(_join(where, "output_format"), "expected \"text\" or \"json\", not %s"
                             % json.dumps(output_format))
        rules = read_rules(self, spec, where)
        if "cache" in rules and not annotations.get("readOnlyHint"):
            raise self.error(_join(where, "cache"), "only a read-only tool's results may be cached: add "
                             "\"annotations\": {\"readOnlyHint\": true} if it changes nothing, or remove `cache`")
        ok_exit = self.get(spec, "ok_exit_codes", list, where, [0])
        if not ok_exit or not all(type(code) is int and 0 <= code <= 255 for code in ok_exit):
            raise self.error(_join(where, "ok_exit_codes"), "expected a list of exit codes 0-255 that mean "
                             "success, e.g. [0, 1] for grep (1: no match)")
        files = sorted({n for n, p in spec.get("parameters", {}).items() if p.get("type") == "file"}
                       | {key for key, field in template.fields.items() if field.kind == "file"})
        return CommandTool(ToolSpec(
            name, template, description=self.get(spec, "description", str, where),
            title=self.get(spec, "title", str, where), annotations=annotations, schema=schema, defaults=defaults,
            stdin=stdin, shell=shell, within=within, output_format=output_format, ok_exit=ok_exit, asked=asked,
            rules=rules, files=files, output_folder=output_folder,
            interactive=self.get(spec, "interactive", bool, where, stdin is None), answers=read_answers(self, spec, where),
            file_resources=self.get(spec, "file_resources", bool, where, False), configured=True), runner,
            settings.derive(**overrides))

    def within(self, spec, where, properties):
        """spec["within"]: {field: folder}, each field a path that must stay inside its folder.
        Returns {key: real folder path}."""
        out = {}
        for name, folder, here in self.members(spec, "within", where):
            key = name if name in properties else name.replace("-", "_")
            if key not in properties:
                raise self.error(here, "`%s` is not a parameter of this %s (known: %s)" % (
                    name, "resource's uri" if "uri" in spec else "tool", ", ".join(properties) or "none"))
            kind = properties[key].get("type", "string")
            if kind not in ("string", "array") or (kind == "array" and
                                                   properties[key].get("items", {}).get("type", "string") != "string"):
                raise self.error(here, "only a string (or an array of strings) can be a path, not %s" % kind)
            if not isinstance(folder, str):
                raise self.error(here, "expected a folder path (a string), not %s" % json.dumps(folder)[:60])
            out[key] = os.path.realpath(self.folder_path(folder, here))
        return out

    def timeout(self, obj, where):
        """obj["timeout"] as positive seconds, or None when it is not given."""
        value = self.get(obj, "timeout", NUMBER, where)
        if value is not None and value <= 0:
            raise self.error(_join(where, "timeout"), "expected a positive number of seconds")
        return value

    def choice(self, obj, key, choices, where, default=None):
        """obj[key], one of `choices` (taskSupport: how its tools run as MCP tasks; toolSearch)."""
        value = self.get(obj, key, str, where, default)
        if value != default and value not in choices:
            raise self.error(_join(where, key), "expected %s, not %s"
                             % (", ".join(json.dumps(v) for v in choices), json.dumps(value)))
        return value

    def run_overrides(self, spec, where, settings: RunSettings):
        """A tool's or resource's own timeout, working_directory, environment (and a tool's taskSupport)."""
        overrides = {}
        if "taskSupport" in spec:
            overrides["task_support"] = self.choice(spec, "taskSupport", TASK_SUPPORT, where, settings.task_support)
        if "timeout" in spec:
            overrides["timeout"] = self.timeout(spec, where)
        if "max_text" in spec:
            overrides["max_text"] = read_max_text(self, spec, where)
        if "working_directory" in spec:
            overrides["cwd"] = self.folder_path(self.get(spec, "working_directory", str, where),
                                                _join(where, "working_directory"))
        env = self.environment(spec, where)
        if env:
            overrides["env"] = dict(settings.env or os.environ, **env)
        return overrides

    def template(self, source, where, text=False, shell=False) -> CommandTemplate:
        """Parse one command template, errors naming `where`."""
        try:
            return CommandTemplate(source, text=text, shell=shell)
        except TemplateError as exc:
            raise self.error(where, "bad template: %s" % exc)

    def parameters(self, params, where):
        """CLI-as-MCP parameters to (schema, defaults, asked); `required` defaults to true unless a default is
        given; `asked` holds the parameters the user is asked for when a call leaves them out (`ask`)."""
        if not isinstance(params, dict):
            raise self.error(where, "expected an object of parameters, not %s" % _type_name(params))
        properties, required, defaults, asked = {}, [], {}, {}
        for name, spec in params.items():
            here = _join(where, name)
            if not re.fullmatch(_FIELD_NAME, name):
                raise self.error(here, "a parameter name starts with a letter or _, then letters, digits, _ and -")
            spec = _given(spec)
            self.keys(spec, _PARAMETER_KEYS, here)
            kind = self.get(spec, "type", str, here, "string")
            if kind not in _PARAMETER_TYPES:
                alias = {"int": "integer", "float": "number", "bool": "boolean", "list": "array"}
                close = _close_match(kind, _PARAMETER_TYPES + tuple(alias), 0.5)
                hint = " (did you mean `%s`?)" % alias.get(close, close) if close else ""
                raise self.error(_join(here, "type"), "expected one of %s, not %s%s"
                                 % (", ".join(_PARAMETER_TYPES), json.dumps(kind), hint))
            prop = {"type": kind}
            if kind == "array":
                prop["items"] = self.get(spec, "items", dict, here, {"type": "string"})
                if prop["items"].get("type", "string") not in _PARAMETER_TYPES[:4]:
                    raise self.error(_join(here, "items.type"), "expected one of string, integer, number, boolean")
            if "enum" in spec:
                values = self.get(spec, "enum", list, here)
                if not values:
                    raise self.error(_join(here, "enum"), "expected a non-empty list of values")
                for value in values:
                    problems = validate(value, {"type": kind} if kind != "array" else prop["items"], "the value %s" % json.dumps(value))
                    if problems:
                        raise self.error(_join(here, "enum"), problems[0])
                prop["enum"] = values
            if "description" in spec:
                prop["description"] = self.get(spec, "description", str, here)
            if self.get(spec, "secret", bool, here, False):
                prop["writeOnly"] = True  # JSON Schema's mark of a password: masked in the audit log
            if "default" in spec:
                problems = validate(spec["default"], prop, "the default")
                if problems:
                    raise self.error(_join(here, "default"), problems[0])
                prop["default"] = defaults[name] = spec["default"]
            ask = self.get(spec, "ask", (bool, str), here, False)
            if ask is not False:
                if "default" in spec or spec.get("required") is True:
                    raise self.error(_join(here, "ask"), "a parameter the user is asked for has no default and is "
                                     "not required of the model (it may leave it out): drop `default` or `required`")
                if kind == "array":
                    raise self.error(_join(here, "ask"), "a form asks for a string, number or boolean, not an array")
                asked[name] = ask if isinstance(ask, str) else prop.get("description", name)
            elif self.get(spec, "required", bool, here, "default" not in spec):
                required.append(name)
            if kind == "file":  # the client gives the file itself; the command gets its path
                prop.update(type="string", description=_FILE_VALUE % prop.get("description", name))
            properties[name] = prop
        return object_schema(properties, required), defaults, asked

    def bind(self, template: CommandTemplate, properties, where, declared_by="parameter"):
        """Point the template's fields and blocks at declared parameters; refuse undeclared ones.

        `declared_by="field"`: the schema came from the template's own fields
        (the `command` form), so a block must test one of those fields.
        """
        def declared(name):
            for key in (name, name.replace("-", "_")):
                if key in properties:
                    return key
            close = _close_match(name, list(properties))
            what = "a declared parameter" if declared_by == "parameter" else "a field of the template"
            raise self.error(where, "the template uses `%s`, which is not %s%s" % (
                name, what, " (did you mean `%s`?)" % close if close else
                " (known: %s)" % (", ".join(properties) or "none")))
        for field in template.occurrences():
            field.key = declared(field.name)
            kind = properties[field.key].get("type")
            if field.kind == "boolean" and kind != "boolean":
                raise self.error(where, "`%s` is a flag ([%s]) but the parameter is not a boolean"
                                 % (field.name, field.flag))
            if field.kind != "boolean":
                field.kind = "array" if kind == "array" else "string"
                field.required = field.required and not field.in_group
        for block in template.blocks:
            block.key = declared(block.name)

    def resource(self, spec, where, runner: ProcessRunner, settings: RunSettings):
        """One `resources` entry as a CommandResource."""
        spec = _given(spec)
        self.keys(spec, _RESOURCE_KEYS, where)
        for key in ("uri", "command"):
            if key not in spec:
                raise self.error(where, "a resource needs `%s`" % key)
        uri = self.get(spec, "uri", str, where)
        if not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", uri):
            raise self.error(_join(where, "uri"), "%s is not a URI (it needs a scheme, like git://status)" % json.dumps(uri))
        command = self.template(self.get(spec, "command", str, where), _join(where, "command"))
        names = [m.replace("-", "_") for m in re.findall(r"\{(%s)\}" % _FIELD_NAME, uri)]
        if len(set(names)) != len(names):
            raise self.error(_join(where, "uri"), "a {parameter} appears twice in %s" % uri)
        pattern, params = _uri_pattern(uri)
        for field in command.occurrences():
            if field.key not in params:
                raise self.error(_join(where, "command"), "the command uses `%s`, which is not a {parameter} of "
                                 "the uri %s" % (field.name, uri))
            field.kind = "string"
        within = self.within(spec, where, {key: {"type": "string"} for key in params})
        overrides = self.run_overrides(spec, where, settings)
        mime = self.get(spec, "mime_type", str, where) or self.get(spec, "mimeType", str, where) or "text/plain"
        return CommandResource(uri, self.get(spec, "name", str, where) or uri, command, runner,
                               settings.derive(**overrides), pattern, params,
                               description=self.get(spec, "description", str, where),
                               title=self.get(spec, "title", str, where), mime_type=mime, within=within)


# --------------------------------------------------------------------------
# OAuth 2.1 for URL upstreams, as the MCP authorization specification says
# --------------------------------------------------------------------------
# A server that answers 401 with `WWW-Authenticate: Bearer ...` is signed in
# to: its protected resource metadata (RFC 9728) names the authorization
# server, whose metadata (RFC 8414 / OpenID discovery) gives the endpoints;
# the client is pre-registered (the config's `oauth` block), a Client ID
# Metadata Document, or registered on the spot (RFC 7591); the browser is sent
# to the authorization endpoint (PKCE S256, `state`, `resource` of RFC 8707)
# and comes back to a loopback callback; the code is exchanged for tokens,
# kept per server in a file only the user can read, and refreshed. A 403
# `insufficient_scope` signs in again with the scopes joined (step-up). Pure
# parts (the challenge parser, the discovery URLs, the resource check, PKCE)
# have no I/O.

OAUTH_CALLBACK_WAIT = 300.0    # seconds a sign-in waits for the browser to come back
OAUTH_HTTP_TIMEOUT = 30.0      # seconds for one request to an authorization server
OAUTH_STEP_UPS = 2             # sign-ins one request may cause (401, then 403 insufficient_scope)
OAUTH_REFRESH_EARLY = 60       # seconds before its expiry an access token is refreshed
URL_ELICITATION_REQUIRED = -32042  # a call that waits for the client's user to open a URL (elicitation URL mode)


def www_authenticate(header):
    """The parameters of the `Bearer` challenge in a WWW-Authenticate value (RFC 6750 §3), {} if none.

    >>> www_authenticate('Bearer error="insufficient_scope", scope="a b"')["scope"]
    'a b'
    """
    match = re.search(r"(?:^|[\s,])Bearer(?:\s+|$)", header or "", re.I)
    if not match:
        return {}
    params, rest = {}, header[match.end():]
    pattern = re.compile(r'\s*([A-Za-z0-9_.-]+)\s*=\s*("((?:[^"\\]|\\.)*)"|[^\s,]*)\s*,?')
    while rest.strip():
        found = pattern.match(rest)
        if not found:
            break  # the next scheme (`Basic realm=...`), or junk
        value = found.group(3) if found.group(3) is not None else found.group(2)
        params.setdefault(found.group(1).lower(), re.sub(r"\\(.)", r"\1", value))
        rest = rest[found.end():]
    return params


def _origin(url):
    import urllib.parse
    return ("%s://%s" % urllib.parse.urlsplit(url)[:2]).lower()


def protected_resource_urls(server_url, from_header=None):
    """Where a server's protected resource metadata may be (RFC 9728 §3.1), in the order to try."""
    import urllib.parse
    path = urllib.parse.urlsplit(server_url).path.rstrip("/")
    urls = [from_header] if from_header else []
    if path:
        urls.append(_origin(server_url) + "/.well-known/oauth-protected-resource" + path)
    urls.append(_origin(server_url) + "/.well-known/oauth-protected-resource")
    return urls


def authorization_server_urls(issuer):
    """Where an authorization server's metadata may be: RFC 8414, then OpenID discovery both ways."""
    import urllib.parse
    path = urllib.parse.urlsplit(issuer).path.rstrip("/")
    base = _origin(issuer)  # without a path, the last two are one URL
    return list(dict.fromkeys([base + "/.well-known/oauth-authorization-server" + path,
                               base + "/.well-known/openid-configuration" + path,
                               base + path + "/.well-known/openid-configuration"]))


def resource_covers(resource, server_url):
    """Whether metadata for `resource` may speak for `server_url`: the same origin, and its path or a parent."""
    import urllib.parse
    if _origin(resource) != _origin(server_url):
        return False
    mine = urllib.parse.urlsplit(server_url).path.rstrip("/")
    theirs = urllib.parse.urlsplit(resource).path.rstrip("/")
    return mine == theirs or mine.startswith(theirs + "/")


def secure_url(url):
    """https, or plain http to this machine (a loopback address, localhost or *.localhost): what a sign-in fetches
    or sends the browser to (RFC 8414, 9728)."""
    import urllib.parse
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    return parts.scheme == "https" or parts.scheme == "http" and (_loopback(host) or host.endswith(".localhost"))


def pkce_pair():
    """(code_verifier, S256 code_challenge) of RFC 7636."""
    import hashlib
    import secrets
    verifier = secrets.token_urlsafe(48)
    return verifier, base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


def oauth_folder():
    """Where sign-ins are kept: the mcpstudio config folder's `oauth`."""
    return os.path.join(os.path.dirname(default_config_path()), "oauth")


def oauth_request(url, data=None, headers=None, limit=1 << 20):
    """One HTTP request to an authorization server: (status, response headers, up to `limit` bytes of body). A
    redirect is not followed (it would carry the client's credentials elsewhere); OAuthError when unreachable."""
    import urllib.error
    import urllib.request

    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args):
            return None
    request = urllib.request.Request(url, data=data, headers=dict({"Accept": "application/json"}, **_object(headers)))
    try:
        with urllib.request.build_opener(Stay).open(request, timeout=OAUTH_HTTP_TIMEOUT) as response:
            return response.status, response.headers, response.read(limit)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read(limit)
    except (OSError, ValueError) as exc:
        raise OAuthError("cannot reach %s: %s" % (url, getattr(exc, "reason", None) or exc))


def _basic_auth(client_id, secret):
    """An `Authorization` value for a client at an authorization server: HTTP Basic of the form-encoded id and
    secret (RFC 6749 §2.3.1)."""
    import urllib.parse
    pair = "%s:%s" % (urllib.parse.quote(client_id, safe=""), urllib.parse.quote(secret, safe=""))
    return "Basic " + base64.b64encode(pair.encode()).decode()


def _auth_method(metadata, choices):
    """The first of `choices` (token endpoint authentication methods) the authorization server's metadata
    supports (client_secret_basic when it names none, RFC 8414 §2); else the first of `choices`."""
    supported = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    return next((method for method in choices if method in supported), choices[0])


def _fetch_json(url, data=None, headers=None):
    """One blocking request (oauth_request): (status, JSON object or None). OAuthError when unreachable."""
    status, _, body = oauth_request(url, data, headers)
    try:
        parsed = json.loads(body)
    except BAD_JSON:
        parsed = None
    return status, parsed if isinstance(parsed, dict) else None


class TokenStore:
    """One server's sign-in on disk: its client registration and tokens, in a file only the user can read."""

    def __init__(self, url, folder=None):
        import urllib.parse
        self.url = url
        host = re.sub(r"[^A-Za-z0-9.-]", "_", urllib.parse.urlsplit(url).hostname or "server")
        self.path = os.path.join(folder or oauth_folder(),
                                 "%s-%s.json" % (host, _hash(url, 12)))

    def load(self):
        """The kept sign-in, {} without one (a symlink in the file's place is not followed)."""
        try:
            data = read_private_json(self.path)
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("url") == self.url else {}

    def save(self, data):
        write_private_json(self.path, dict(data, url=self.url))

    def delete(self):
        try:
            os.remove(self.path)
            return True
        except FileNotFoundError:
            return False


class _Callback:
    """The loopback redirect target of one sign-in: http://127.0.0.1:PORT/callback, one answer, the one that
    carries `state` (another, such as a forged redirect, is ignored). Requests are served each in a thread,
    with a socket timeout: an idle connection stalls nothing."""

    def __init__(self, state, port=0):
        import http.server
        import urllib.parse
        found = {}
        done = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            timeout = 10

            def do_GET(self):
                parts = urllib.parse.urlsplit(self.path)
                query = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query).items()}
                if parts.path != "/callback" or done.is_set() or query.get("state") != state:
                    self.send_error(404)
                    return
                found.update(query)
                body = (b"<!doctype html><title>mcpstudio</title><p>%s You can close this tab."
                        % (b"Signed in." if "code" in found else b"The sign-in did not finish."))
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                done.set()

            def log_message(self, *args):  # never to stdout or stderr: the query holds the code
                pass
        try:
            self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
            self.server.daemon_threads = True
        except OSError as exc:
            raise OAuthError("cannot listen on 127.0.0.1:%d for the sign-in's redirect: %s%s" % (
                port, exc.strerror or exc, " (oauth.callbackPort is taken; free it or choose another)" if port else ""))
        self.found, self.done = found, done
        self.uri = "http://127.0.0.1:%d/callback" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()

    def wait(self, timeout):
        try:
            if not self.done.wait(timeout):
                raise OAuthError("the browser did not come back within %.0f s" % timeout)
            return dict(self.found)
        finally:
            self.close()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class OAuthClient:
    """Signs in to one protected MCP server and keeps its access token fresh.

    `settings` is the config's `oauth` block: clientId/clientSecret for a
    pre-registered client, scopes, callbackPort, clientMetadataUrl (a Client ID
    Metadata Document), browser (let `serve` open the browser). `interactive`:
    this process may send the user to the browser; otherwise a sign-in fails
    with the `mcpstudio login` command to run.
    """

    def __init__(self, url, name=None, settings=None, interactive=False, say=None, store=None, config=None):
        self.url = url.split("#")[0]
        self.name = name or self.url
        self.settings = settings or {}
        self.interactive = interactive or bool(self.settings.get("browser"))
        self.say = say or _say
        self.config = config  # the config file, for the login command's --config
        self.store = store or TokenStore(self.url)
        self.state = self.store.load()
        self.lock = threading.RLock()

    @property
    def tokens(self):
        return self.state.get("tokens") or {}

    # -- what requests carry -------------------------------------------------------------

    def header(self):
        """`Authorization` for the next request: the access token (refreshed when due), or None."""
        with self.lock:
            tokens = self.tokens
            if not tokens.get("access_token"):
                return None
            expires = tokens.get("expires_at")
            if isinstance(expires, NUMBER) and time.time() > expires - OAUTH_REFRESH_EARLY \
                    and tokens.get("refresh_token"):
                try:
                    self.refresh()
                except OAuthError as exc:
                    self.say("%s: the token expired and refreshing it failed (%s)" % (self.name, exc))
                    return None
            return "Bearer " + self.state["tokens"]["access_token"]

    def login_command(self):
        if not self.config:  # --url: no config names it
            return "mcpstudio login %s" % self.url
        return "mcpstudio login %s --config %s" % (self.name, self.config)

    def challenge(self, status, header, tries, sent):
        """A 401 or 403 came back (the `tries`-th for this request, which carried `sent`): refresh or
        sign in again so that a retry may pass; raise OAuthError when nothing will help."""
        params = www_authenticate(header)
        if status == 403 and params.get("error") != "insufficient_scope":
            raise OAuthError("server %s refused the request (HTTP 403%s)" % (
                self.name, ": " + params["error_description"] if params.get("error_description") else ""))
        with self.lock:
            tokens = self.tokens
            current = "Bearer " + tokens["access_token"] if tokens.get("access_token") else None
            if status == 401 and current and sent != current:
                return  # signed in meanwhile (another request's challenge): retry with the new token
            if status == 401 and tokens.get("refresh_token") and tries == 1:
                try:
                    self.refresh()
                    return
                except OAuthError as exc:
                    self.say("%s: refreshing the token failed (%s); signing in again" % (self.name, exc))
            scopes = params.get("scope", "").split()
            if status == 403:  # step-up: what was granted, and what this request needs (SEP-2350)
                held = (tokens.get("scope") or " ".join(self.state.get("scopes") or [])).split()
                scopes = held + [s for s in scopes if s not in held]
            self.sign_in(params, scopes)

    # -- the flow ----------------------------------------------------------------------------

    def _fetch(self, url, data=None, headers=None):
        """One request to a metadata, registration, token or revocation endpoint: (status, JSON body or None)."""
        if not secure_url(url):
            raise OAuthError("server %s: refusing to fetch %s for the sign-in: it must be https (plain http only on "
                             "this machine)" % (self.name, url))
        return _fetch_json(url, data, headers)

    def _metadata(self, urls):
        """The document of the first of `urls` that answers a JSON object, or None."""
        for url in urls:
            status, document = self._fetch(url)
            if status == 200 and document is not None:
                return document
        return None

    def discover(self, params):
        """(resource metadata or None, issuer, authorization server metadata, whether it is a real document)."""
        resource = self._metadata(protected_resource_urls(self.url, params.get("resource_metadata")))
        if resource is not None:
            named = resource.get("resource")
            if not isinstance(named, str) or not resource_covers(named, self.url):
                raise OAuthError("server %s: its protected resource metadata is for %r, not for %s; refusing to "
                                 "sign in (a token for it could be used elsewhere)" % (self.name, named, self.url))
            servers = resource.get("authorization_servers")
            if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
                raise OAuthError("server %s: its protected resource metadata names no authorization_servers"
                                 % self.name)
            issuer = servers[0]
        else:  # the 2025-03-26 revision: the server's origin is the authorization server
            issuer = _origin(self.url)
        metadata = self._metadata(authorization_server_urls(issuer))
        if metadata is not None:
            if metadata.get("issuer") != issuer:
                raise OAuthError("authorization server %s: its metadata names the issuer %r; refusing it (RFC 8414 "
                                 "§3.3)" % (issuer, metadata.get("issuer")))
            return resource, issuer, metadata, True
        if resource is not None:
            raise OAuthError("authorization server %s publishes no metadata (looked at %s)"
                             % (issuer, ", ".join(authorization_server_urls(issuer))))
        # No resource metadata: the issuer is the server's origin (above), whose default endpoints these are
        return None, issuer, {"issuer": issuer, "authorization_endpoint": issuer + "/authorize",
                              "token_endpoint": issuer + "/token", "registration_endpoint": issuer + "/register"}, False

    def _check_endpoint(self, metadata, key):
        url = metadata.get(key)
        if not isinstance(url, str):
            raise OAuthError("authorization server %s: its metadata has no %s" % (metadata.get("issuer"), key))
        if not secure_url(url):
            raise OAuthError("authorization server %s: its %s %s is not https (plain http is accepted only on "
                             "this machine)" % (metadata.get("issuer"), key, url))
        return url

    def _client(self, metadata, issuer, redirect_uri):
        """The client identity, in the spec's order: pre-registered, metadata document, registered here."""
        if self.settings.get("clientId"):
            client = {"client_id": self.settings["clientId"]}
            if self.settings.get("clientSecret"):
                client["client_secret"] = self.settings["clientSecret"]
            return client
        if metadata.get("client_id_metadata_document_supported") and self.settings.get("clientMetadataUrl"):
            return {"client_id": self.settings["clientMetadataUrl"], "token_endpoint_auth_method": "none"}
        kept = self.state.get("client") or {}
        if kept.get("client_id") and self.state.get("issuer") == issuer and redirect_uri in (kept.get("redirect_uris") or ()):
            return kept
        if not metadata.get("registration_endpoint"):
            raise OAuthError("authorization server %s offers no dynamic client registration: register mcpstudio "
                             "there (redirect URI %s) and put its id in the server's config as \"oauth\": "
                             "{\"clientId\": ...}" % (issuer, redirect_uri))
        method = _auth_method(metadata, ("none", "client_secret_basic", "client_secret_post"))
        grants = ["authorization_code"]
        if "refresh_token" in (metadata.get("grant_types_supported") or ["authorization_code", "refresh_token"]):
            grants.append("refresh_token")
        status, client = self._fetch(self._check_endpoint(metadata, "registration_endpoint"), json.dumps({
            "client_name": "mcpstudio", "redirect_uris": [redirect_uri], "grant_types": grants,
            "response_types": ["code"], "token_endpoint_auth_method": method, "application_type": "native",
        }).encode(), {"Content-Type": "application/json"})
        if status not in (200, 201) or not client or not isinstance(client.get("client_id"), str):
            why = client and (client.get("error_description") or client.get("error"))  # RFC 7591, 3.2.2
            raise OAuthError("authorization server %s refused to register mcpstudio (HTTP %d%s)"
                             % (issuer, status, ": %s" % why if why else ""))
        client.setdefault("token_endpoint_auth_method", method)
        client.setdefault("redirect_uris", [redirect_uri])
        return client

    def _token_request(self, metadata, client, form):
        """POST to the token endpoint; the new tokens."""
        status, tokens = self._client_post(metadata, client, form, "token_endpoint")
        if status != 200 or not tokens or not isinstance(tokens.get("access_token"), str):
            raise OAuthError("the token endpoint of %s answered HTTP %d%s" % (
                metadata.get("issuer"), status, ": %s" % (tokens.get("error_description") or tokens.get("error"))
                if tokens else ""))
        if isinstance(tokens.get("expires_in"), NUMBER):
            tokens["expires_at"] = int(time.time() + tokens["expires_in"])
        return tokens

    def _client_post(self, metadata, client, form, key):
        """POST a form to the endpoint `key`, authenticating as the client was registered to: (status, JSON)."""
        import urllib.parse
        secret = client.get("client_secret")
        method = client.get("token_endpoint_auth_method")
        if method is None:
            method = "none" if not secret else _auth_method(metadata, ("client_secret_basic", "client_secret_post"))
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        form = dict(form, client_id=client["client_id"])
        if secret and method == "client_secret_basic":
            headers["Authorization"] = _basic_auth(client["client_id"], secret)
        elif secret and method == "client_secret_post":
            form["client_secret"] = secret
        return self._fetch(self._check_endpoint(metadata, key), urllib.parse.urlencode(form).encode(), headers)

    def revoke(self):
        """Revoke the refresh token (else the access token) where the server offers RFC 7009 revocation;
        why it could not, or None."""
        tokens, metadata = self.tokens, self.state.get("metadata") or {}
        kind = "refresh_token" if tokens.get("refresh_token") else "access_token"
        if not tokens.get(kind):
            return None
        if not metadata.get("revocation_endpoint"):
            return "its authorization server offers no revocation (RFC 7009): the token stays valid until it expires"
        try:
            status = self._client_post(metadata, self.state.get("client") or {},
                                       {"token": tokens[kind], "token_type_hint": kind}, "revocation_endpoint")[0]
        except OAuthError as exc:
            return str(exc)
        return None if status == 200 else "its revocation endpoint answered HTTP %d" % status
    def refresh(self):
        """Trade the refresh token for a new access token (no browser)."""
        tokens, metadata = self.tokens, self.state.get("metadata") or {}
        if not tokens.get("refresh_token") or not metadata.get("token_endpoint"):
            raise OAuthError("there is no refresh token")
        fresh = self._token_request(metadata, self.state.get("client") or {}, {
            "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
            "resource": self.state.get("resource") or self.url})
        fresh.setdefault("refresh_token", tokens["refresh_token"])  # servers that do not rotate it
        fresh.setdefault("scope", tokens.get("scope"))
        self.state["tokens"] = fresh
        self.store.save(self.state)

    def sign_in(self, params, scopes, opener=None):
        """The whole authorization code flow, from discovery to saved tokens; `opener(url)` shows the sign-in URL
        instead of a browser (a client's URL elicitation)."""
        import urllib.parse
        if not self.interactive and opener is None:
            raise OAuthError("server %s needs a sign-in: run `%s` (or set \"oauth\": {\"browser\": true} on the "
                             "server to let mcpstudio open the browser itself)" % (self.name, self.login_command()))
        resource, issuer, metadata, real = self.discover(params)
        if self.state.get("issuer") not in (None, issuer):  # the server moved to another authorization server
            self.say("%s: its authorization server is now %s; registering there" % (self.name, issuer))
            self.state = {}
        if real and "S256" not in (metadata.get("code_challenge_methods_supported") or ()):
            raise OAuthError("authorization server %s does not offer PKCE with S256 (its metadata's "
                             "code_challenge_methods_supported), which MCP requires; refusing to sign in" % issuer)
        authorize = self._check_endpoint(metadata, "authorization_endpoint")
        audience = _object(resource).get("resource") or self.url  # RFC 8707: exactly as the metadata publishes it
        wanted = self.settings.get("scopes")
        wanted = wanted.split() if isinstance(wanted, str) else list(wanted or scopes or
                                                                     _object(resource).get("scopes_supported") or [])
        if wanted and "offline_access" in (metadata.get("scopes_supported") or ()) and "offline_access" not in wanted and \
                "refresh_token" in (metadata.get("grant_types_supported") or ["refresh_token"]):
            wanted.append("offline_access")  # SEP-2207: a refresh token spares the next sign-in
        import secrets
        state = secrets.token_urlsafe(24)
        callback = _Callback(state, int(self.settings.get("callbackPort") or 0) or self._kept_port(issuer))
        try:
            client = self._client(metadata, issuer, callback.uri)
            verifier, challenge = pkce_pair()
            query = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": callback.uri,
                     "code_challenge": challenge, "code_challenge_method": "S256", "state": state,
                     "resource": audience}
            if wanted:
                query["scope"] = " ".join(wanted)
            url = authorize + ("&" if "?" in authorize else "?") + urllib.parse.urlencode(query)
            self.say("%s: sign in with your browser; if none opens, visit %s" % (self.name, url))
            (opener or self._open_browser)(url)
            answer = callback.wait(OAUTH_CALLBACK_WAIT)
        except BaseException:
            callback.close()
            raise
        if answer.get("error"):
            raise OAuthError("the authorization server said %s%s" % (
                answer["error"], ": " + answer["error_description"] if answer.get("error_description") else ""))
        if "iss" in answer and answer["iss"] != issuer:  # RFC 9207: exact comparison (discover checked the metadata's)
            raise OAuthError("the sign-in's redirect came from issuer %r, not %r; refusing it (RFC 9207)"
                             % (answer["iss"], issuer))
        if metadata.get("authorization_response_iss_parameter_supported") is True and "iss" not in answer:
            raise OAuthError("the sign-in's redirect lacks the `iss` its authorization server promises; refusing "
                             "it (RFC 9207)")
        if not answer.get("code"):
            raise OAuthError("the sign-in's redirect carried no code")
        tokens = self._token_request(metadata, client, {
            "grant_type": "authorization_code", "code": answer["code"], "redirect_uri": callback.uri,
            "code_verifier": verifier, "resource": audience})
        tokens.setdefault("scope", " ".join(wanted))
        self.state = {"issuer": issuer, "client": client, "tokens": tokens, "scopes": wanted, "resource": audience,
                      "metadata": {key: metadata[key] for key in ("issuer", "token_endpoint", "revocation_endpoint",
                                                                  "token_endpoint_auth_methods_supported")
                                   if key in metadata}}
        self.store.save(self.state)
        self.say("%s: signed in (%s)" % (self.name, "scopes: " + tokens["scope"] if tokens["scope"] else "no scopes"))

    def login(self):
        """Sign in afresh (the `login` command): ask the server unsigned, then answer its challenge."""
        status, headers, _ = oauth_request(self.url, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
            "clientInfo": {"name": "mcpstudio", "version": __version__}}}).encode(), {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}, limit=0)
        if status != 401:
            raise OAuthError("%s answered HTTP %d without asking for a sign-in: it needs none" % (self.url, status))
        params = www_authenticate(headers.get("WWW-Authenticate", ""))
        self.sign_in(params, params.get("scope", "").split())

    def _kept_port(self, issuer):
        """The port of the redirect URI registered earlier with this issuer (0: any)."""
        import urllib.parse
        if self.state.get("issuer") != issuer:
            return 0
        for uri in _object(self.state.get("client")).get("redirect_uris") or ():
            port = urllib.parse.urlsplit(uri).port
            if port:
                return port
        return 0

    def _open_browser(self, url):
        """webbrowser honours $BROWSER; it runs in a thread, as some browsers' commands wait until closed."""
        def run():
            import webbrowser
            try:
                webbrowser.open(url)
            except Exception as exc:  # the thread's boundary: the printed URL still works
                self.say("%s: could not open a browser (%s)" % (self.name, exc))
        threading.Thread(target=run, daemon=True).start()

    def summary(self):
        """The sign-in's state for `status`, without the token."""
        tokens = self.tokens
        if not tokens.get("access_token"):
            return "not signed in"
        expires = tokens.get("expires_at")
        if isinstance(expires, NUMBER):
            left = expires - time.time()
            when = ("expired" if left <= 0 else "expires in %d min" % max(1, left // 60)) + \
                   (", refreshable" if tokens.get("refresh_token") else "")
        else:
            when = "no expiry given"
        return "signed in (%s; scopes: %s)" % (when, tokens.get("scope") or "none")


# --------------------------------------------------------------------------
# Input on the way: multi round-trip requests across the eras (SEP-2322)
# --------------------------------------------------------------------------

CLIENT_FEATURES = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}
INPUT_ROUNDS = 10  # input_required rounds answered for a handshake-era client before mcpstudio gives up


class _Parked:
    """A call to a handshake-era server, waiting on the 2026-07-28 client's answers."""

    call = None  # the forwarded request, running on its own
    expiry = None

    caller = None  # who made the call (a parked call counts against its caller's PARKED_PER_CALLER)

    def __init__(self, method, name, owner=None):
        self.method, self.name = method, name  # what the retry must repeat
        self.owner = owner    # whose call it is (CallContext.owner): another person's retry does not answer it
        self.asks = {}        # input key -> (method, params, future of the client's answer)
        self.changed = asyncio.Event()


PARKED_PER_CALLER = 8            # calls of one caller that may wait for a 2026-07-28 retry's answers at once


class InputBridge:
    """A handshake-era server's requests (elicitation, sampling, roots) during a 2026-07-28 client's call,
    turned into that era's input_required results.

    Such a client takes no requests. Its call goes on in the background; the client gets
    `resultType: "input_required"` with the server's requests as `inputRequests` and a `requestState`
    that names the waiting call. Its retry (same method and name, the answers in `inputResponses`, that
    `requestState`) answers the server, and waits for the result or the next question. A call nobody
    comes back for is cancelled after ASK_TIMEOUT."""

    ids = None  # the Instance that names its requestStates over --http (a retry elsewhere is told where it lives)

    def __init__(self):
        self.parked = {}  # requestState -> _Parked
        self.calls = {}   # the CallContext a call was forwarded with -> its _Parked

    def identify(self, instance):
        """Name the requestStates parked from now on after `instance` (an Instance: --http, for a balancer)."""
        self.ids = instance

    async def exchange(self, forward, method, name, ctx):
        """`forward(ctx)` as a multi round-trip request of `ctx`'s client."""
        state = ctx.inputs.get("requestState")
        if state is None:
            entry = _Parked(method, name, ctx.owner)
            entry.caller = ctx.session.caller or "session-%x" % id(ctx.session)
            entry.call = asyncio.ensure_future(forward(ctx))  # outlives this request, if it must
            self.calls[ctx] = entry
            entry.call.add_done_callback(lambda _: self.calls.pop(ctx, None))
        else:
            entry = self.parked.get(state) if isinstance(state, str) else None
            elsewhere = not entry and self.ids and self.ids.elsewhere(state)
            if elsewhere:  # its command runs on one instance only: nothing here can answer it
                raise _invalid_params("this `requestState` belongs to a prompt round that waits on another instance: "
                                      "%s; call again without it (its command is stopped there after %d s)"
                                      % (elsewhere, ASK_TIMEOUT), {"instance": self.ids.name})
            if not entry or (entry.method, entry.name, entry.owner) != (method, name, ctx.owner):
                raise _invalid_params("unknown `requestState` (it belongs to another "
                                      "request, or expired after %d s): call again without it" % ASK_TIMEOUT)
            del self.parked[state]
            entry.expiry.cancel()
            answers = _object(ctx.inputs.get("inputResponses"))
            for key, (_, _, future) in entry.asks.items():
                if key in answers and not future.done():
                    future.set_result(answers[key])
        try:
            while not entry.call.done():
                entry.asks = {key: ask for key, ask in entry.asks.items() if not ask[2].done()}
                if entry.asks and sum(1 for parked in self.parked.values()
                                      if parked.caller == entry.caller) >= PARKED_PER_CALLER:
                    entry.call.cancel()  # each parked call may be a live process, for up to ASK_TIMEOUT
                    raise McpError(INVALID_REQUEST, "%d calls of this caller already wait for answers "
                                   "(input_required); answer them first" % PARKED_PER_CALLER)
                if entry.asks:
                    return self._park(entry)
                entry.changed.clear()
                waiter = asyncio.ensure_future(entry.changed.wait())
                await asyncio.wait([entry.call, waiter], return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
        except asyncio.CancelledError:  # the client gave up on it
            entry.call.cancel()
            raise
        return entry.call.result()

    def _park(self, entry: _Parked):
        import secrets
        state = self.ids.new_id() if self.ids else secrets.token_urlsafe(16)
        self.parked[state] = entry
        entry.expiry = asyncio.get_running_loop().call_later(ASK_TIMEOUT, self._expire, state)
        return {"resultType": "input_required", "requestState": state,
                "inputRequests": {key: {"method": method, "params": params}
                                  for key, (method, params, _) in entry.asks.items()}}

    def _expire(self, state):
        entry = self.parked.pop(state, None)
        if entry:
            entry.call.cancel()

    async def ask(self, ctx, method, params):
        """A server's request during `ctx`'s call: its answer, once the client's retry brings it."""
        entry = self.calls.get(ctx)
        if not entry:
            raise McpError(METHOD_NOT_FOUND, "mcpstudio's client offers no %s outside a call" % method)
        key = "%s-%d" % (CLIENT_FEATURES[method], len(entry.asks) + 1)
        while key in entry.asks:
            key += "'"
        future = asyncio.get_running_loop().create_future()
        entry.asks[key] = (method, params, future)
        entry.changed.set()
        return await future

    def close(self):
        for state in list(self.parked):
            self._expire(state)

    async def forward(self, upstream, method, params, ctx):
        """Forward a request that may need the user's input on the way (SEP-2322), whatever the eras:
        a 2026-07-28 client and server pass `inputResponses`, `requestState` and the input_required
        result through untouched; a handshake-era client is asked what a 2026-07-28 server's result
        asks for, and the server is asked again with the answers; a handshake-era server's requests
        during a 2026-07-28 client's call become input_required results (exchange)."""
        await upstream.ready(ctx)
        modern = ctx and ctx.modern
        if not upstream.modern_for(ctx, params.get("name")):
            if modern and ctx.task is None:
                return await self.exchange(lambda first: upstream.forward(method, params, first), method,
                                                  params["name"], ctx)
            return await upstream.forward(method, params, ctx)
        if modern:
            inputs = dict(ctx.inputs)
            if ctx.answered and isinstance(inputs.get("inputResponses"), dict):  # the server's own answers only
                inputs["inputResponses"] = {key: answer for key, answer in inputs["inputResponses"].items()
                                            if key not in ctx.answered}
                if not inputs["inputResponses"]:
                    del inputs["inputResponses"]
            return await upstream.forward(method, dict(params, **inputs), ctx)
        for _ in range(INPUT_ROUNDS):
            result = await upstream.forward(method, params, ctx)
            if result.get("resultType") != "input_required":
                return result
            params = {key: value for key, value in params.items() if key not in ("inputResponses", "requestState")}
            params["inputResponses"] = await self._answers(upstream, result, ctx)
            if "requestState" in result:
                params["requestState"] = result["requestState"]
        raise McpError(INTERNAL_ERROR, "server `%s` still wanted input after %d rounds; gave up" % (
            upstream.spec.id, INPUT_ROUNDS))

    async def _answers(self, upstream, result, ctx):
        """A handshake-era client's answers to a 2026-07-28 server's `inputRequests`, asked one by one."""
        requests = result.get("inputRequests")
        if not isinstance(requests, dict) or not requests:
            raise McpError(INTERNAL_ERROR, "server `%s` answered input_required without inputRequests" % upstream.spec.id)
        answers = {}
        for key, request in requests.items():
            method = _object(request).get("method")
            session = ctx and ctx.session
            if method not in CLIENT_FEATURES or not session or CLIENT_FEATURES[method] not in session.client_capabilities:
                raise McpError(INVALID_REQUEST, "server `%s` needs %s from the client, which it does not offer"
                               % (upstream.spec.id, json.dumps(method)))
            answers[key] = await session.request(method, _object(request.get("params")), upstream.spec.tool_timeout,
                                                 related=ctx.request_id)
        return answers


# --------------------------------------------------------------------------
# Upstreams: one MCP server behind this one, over stdio or HTTP
# --------------------------------------------------------------------------
# An Upstream is an MCP client of one configured server: its channel (a child's
# stdin/stdout, or Streamable HTTP with OAuth), the JSON-RPC client over it, its
# listings cached on disk, its stderr log, restarts with backoff, a ping when idle,
# its subscriptions/listen stream, its requests back to us and its tasks.

LIST_WAIT = 2.0               # seconds a listing waits, in all, for servers with nothing cached yet
                              # ($MCPSTUDIO_LIST_WAIT changes it: clients that wait longer, slow machines)
LIST_PARALLEL = 4             # servers `status --check` starts at once
CACHE_LINGER = 10.0           # seconds mcpstudio, exiting, waits for a first listing to cache it
HEALTH_TIMEOUT = 10.0         # seconds a ping may take before the server is restarted
STDIN_CLOSE_WAIT = 1.0        # seconds a server may take to exit once its stdin closes
LOG_LINES = 500               # lines of each server's stderr and lifecycle kept for server_logs
BACKOFF_FIRST = 1.0           # seconds before restarting a server that failed twice in a row; doubles
BACKOFF_MAX = 30.0
BACKOFF_WAIT = 2.0            # a call waits out a backoff this short; a longer one fails at once
UPSTREAM_MAX_ITEMS = 5000     # tools (prompts, resources, templates) kept of one server's listing: the rest left out
UPSTREAM_MAX_ITEM = 64 << 10  # bytes of one listed item (its description and schemas): a larger one is left out
SHOWN_ELICITATIONS = 100      # URL elicitations a server had shown whose elicitation/complete is awaited (the oldest go)
UPSTREAM_NOTICES = 50         # notifications a second a server may send (bursts as large): the rest are dropped
UPSTREAM_CACHE_FORMAT = 1
UPSTREAM_CACHE_MAX = 64 << 20  # bytes of one cached listing; a larger file is ignored


def _list_wait():
    """LIST_WAIT, or the seconds $MCPSTUDIO_LIST_WAIT gives (0 to 60)."""
    try:
        return min(max(float(os.environ["MCPSTUDIO_LIST_WAIT"]), 0.0), 60.0)
    except (KeyError, ValueError):
        return LIST_WAIT


class _UpstreamProtocol(asyncio.SubprocessProtocol):
    """Lines from a server's stdout (messages) and stderr (for its log), and its exit."""

    transport = None
    reason = None  # why it ended, once it has
    _gone = False

    def __init__(self, client, server_log, gone):
        """Its server's McpClient and ServerLog, and the Upstream's gone(), called with it once the process ended."""
        self.client, self.server_log, self.gone = client, server_log, gone
        self.exited = asyncio.get_running_loop().create_future()
        self.open_pipes = {1, 2}
        self._out = StdioFraming(MAX_MESSAGE, self._oversized)
        self._err = bytearray()

    def connection_made(self, transport):
        self.transport = transport

    def pipe_data_received(self, fd, data):
        if fd != 1:
            self._err += data
            *lines, rest = self._err.split(b"\n")
            self._err = bytearray(rest[-65536:])
            for line in lines:
                self.server_log.stderr_line(_decoded(bytes(line).rstrip(b"\r")))
            return
        for item, _ in self._out.feed(data):
            if not isinstance(item, McpError):  # a line over MAX_MESSAGE: _oversized
                self.client.received(item)

    def _oversized(self, head, tail):
        """A line over MAX_MESSAGE was skipped: fail the request it answers (its id starts or ends it)."""
        found = re.match(rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(\d+)\s*,', head) or \
            re.search(rb',\s*"id"\s*:\s*(\d+)\s*\}\s*$', tail)
        client = self.client
        self.server_log.note("skipped a message over %d bytes on stdout%s" % (
            MAX_MESSAGE, " (the answer to request %s)" % found.group(1).decode() if found else ""))
        if found:
            client.fail(int(found.group(1)), SERVER_ANSWER_TOO_LARGE, "server `%s` answered with a message over "
                        "%d bytes, more than mcpstudio accepts; ask for less at a time (a smaller range, page "
                        "or file)" % (client.name, MAX_MESSAGE))

    def send(self, message):
        pipe = self.transport and self.transport.get_pipe_transport(0)
        if pipe and not pipe.is_closing():
            pipe.write(encode_message(message))

    def abort(self, request_id):
        """Nothing to close per request on stdio: notifications/cancelled says it."""

    def pipe_connection_lost(self, fd, exc):
        self.open_pipes.discard(fd)
        if not self.open_pipes and self.exited.done():
            self._finish()

    def process_exited(self):
        if not self.exited.done():
            self.exited.set_result(None)
        # Answers and last words written just before exiting may still be in the pipes: read
        # them first (a grandchild holding the pipes gets PIPE_LINGER).
        if not self.open_pipes:
            self._finish()
        else:
            asyncio.get_running_loop().call_later(PIPE_LINGER, self._finish)

    def _finish(self):
        if not self._gone:
            self._gone = True
            if self._err:
                self.server_log.stderr_line(_decoded(self._err))
            self.gone(self)


HTTP_RESUME_WAIT_MS = 10000  # the longest an upstream's `retry` may make us wait to resume its stream


def _encode_header(text):
    """A value for an Mcp-Name or Mcp-Param header: as it is when it is plain printable ASCII, else
    `=?base64?...?=` of its UTF-8 (SEP-2243)."""
    if text.isascii() and text.isprintable() and text == text.strip() and not text.startswith("=?"):
        return text
    return "=?base64?%s?=" % base64.b64encode(text.encode()).decode()


def header_problem(tool):
    """Why a tool's `x-mcp-header` declarations break SEP-2243's rules (then no client may list it), or None."""
    seen = set()
    for key, prop in _object(_object(tool.get("inputSchema")).get("properties")).items():
        if not isinstance(prop, dict) or "x-mcp-header" not in prop:
            continue
        header = prop["x-mcp-header"]
        if not isinstance(header, str) or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", header):
            return ("the x-mcp-header %s of `%s` is not a header name (ASCII letters, digits and !#$%%&'*+.^_`|~-; "
                    "no space, colon or control character)" % (json.dumps(header), key))
        if prop.get("type", "string") not in ("string", "integer", "boolean"):
            return "`%s` has an x-mcp-header, but only string, integer and boolean parameters may" % key
        if header.lower() in seen:
            return "the x-mcp-header %s appears twice (header names ignore case)" % json.dumps(header)
        seen.add(header.lower())
    return None


def param_texts(tool, arguments):
    """SEP-2243: each `x-mcp-header` name of `tool`'s schema -> the text its argument goes as (None: the argument is
    absent, null or structured, and no header goes); the listing kept only valid declarations."""
    texts = {}
    for key, schema in _object(_object(_object(tool).get("inputSchema")).get("properties")).items():
        value = _object(arguments).get(key)
        if isinstance(schema, dict) and "x-mcp-header" in schema:
            texts[schema["x-mcp-header"]] = None if value is None or isinstance(value, (dict, list)) else \
                ("true" if value else "false") if isinstance(value, bool) else str(value)
    return texts


def param_mismatch(tool, arguments, headers):
    """Why a 2026-07-28 tools/call's `Mcp-Param-*` headers (`headers`: lower-case names) disagree with its arguments
    (SEP-2243: each argument `tool` marks with `x-mcp-header` goes as its header, no other), or None."""
    for header, text in param_texts(tool, arguments).items():
        sent = headers.get("mcp-param-" + header.lower())
        if (sent is None) != (text is None) or (sent is not None and _header_value(sent) != text):
            return ("the Mcp-Param-%s header must %s" % (header, "be left out: the argument is absent or null"
                    if text is None else "carry the argument's value (=?base64?...?= for one that is not plain ASCII)"))
    return None


def header_checked(tools, server, log):
    """The tools whose x-mcp-header declarations keep SEP-2243's rules; a warning names each other one."""
    kept = []
    for tool in tools:
        problem = header_problem(tool)
        if problem:
            log.warning("server `%s`: tool `%s` is left out: %s (SEP-2243); the server must fix its schema",
                        server, tool["name"], problem)
        else:
            kept.append(tool)
    return kept


class _HttpChannel:
    """An upstream server reached by URL, spoken to with http.client in worker threads.

    Streamable HTTP: each message is a POST; its reply (JSON, or an SSE stream
    of notifications then the response) comes back on that POST. The older
    HTTP+SSE transport (`"type": "sse"`): one GET stream carries every message
    from the server, after an `endpoint` event names where to POST. TLS
    verifies certificates (SSL_CERT_FILE is honoured); HTTP(S)_PROXY and
    NO_PROXY are honoured; chunked replies are decoded by http.client.
    """

    reason = None       # why it is unusable, once it is
    session_id = None   # Mcp-Session-Id (handshake era)
    stream = None       # the GET socket: the HTTP+SSE transport's, or the standalone stream's
    closed = False
    oauth = None        # signs in when the server answers 401 (not with an Authorization of the config)

    def __init__(self, upstream):
        self.upstream = upstream
        self.spec = upstream.spec
        self.loop = asyncio.get_running_loop()
        self.post_url = self.spec.url
        self.connections = {}         # request id -> the socket its reply comes on, to abort
        self.aborted = set()          # request ids cancelled by closing their connection
        self.sending = threading.Lock()  # messages leave in the order they were sent
        if self.spec.oauth is not None and not upstream.bearer and not any(
                key.lower() == "authorization" for key in self.spec.headers):
            self.oauth = OAuthClient(self.spec.url, self.spec.key, self.spec.oauth, interactive=sys.stderr.isatty(),
                                     say=lambda text: upstream.log.info("%s", text), config=upstream.config_path)

    # -- connections --------------------------------------------------------------------

    def _connection(self, url, timeout):
        import http.client
        import urllib.parse
        import urllib.request
        parts = urllib.parse.urlsplit(url)
        secure = parts.scheme == "https"
        host, port = parts.hostname, parts.port or (443 if secure else 80)
        target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
        proxy = None if urllib.request.proxy_bypass_environment(host) else \
            urllib.request.getproxies_environment().get("https" if secure else "http")
        address = (host, port)
        if proxy:
            proxy = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
            address = (proxy.hostname, proxy.port or 8080)
        if secure:
            import ssl
            connection = http.client.HTTPSConnection(*address, timeout=timeout, context=ssl.create_default_context())
            if proxy:  # a CONNECT tunnel, TLS inside it
                connection.set_tunnel(host, port)
        else:
            connection = http.client.HTTPConnection(*address, timeout=timeout)
            if proxy:  # a plain proxy takes the whole URL
                target = url
        return connection, target

    def _headers(self, message=None, url=None):
        headers = dict({"Accept": "application/json, text/event-stream"}, **self.spec.headers)
        here = _origin(url or self.post_url) == _origin(self.spec.url)  # the server's origin: where a token is for
        if self.upstream.bearer and here:  # the person's own, for this server
            headers["Authorization"] = "Bearer " + self.upstream.bearer
        elif self.oauth and here:  # where issued
            bearer = self.oauth.header()
            if bearer:
                headers["Authorization"] = bearer
        if message is not None:
            headers["Content-Type"] = "application/json"
            client = self.upstream.client
            params = message.get("params") or {}
            modern = client.modern or META_VERSION in _object(params.get("_meta"))  # this request's era
            if modern:
                method = message.get("method")
                headers["MCP-Protocol-Version"] = MODERN_VERSIONS[0]
                if method:
                    headers["Mcp-Method"] = method
                    name = params.get(_NAMED.get(method, "name"))
                    if method in _NAMED and isinstance(name, str):
                        headers["Mcp-Name"] = _encode_header(name)
                    if method == "tools/call":
                        headers.update(self._param_headers(name, params.get("arguments")))
            elif client.protocol_version:
                headers["MCP-Protocol-Version"] = client.protocol_version
            if self.session_id and not modern:  # a 2026-07-28 request belongs to no session
                headers["Mcp-Session-Id"] = self.session_id
        return headers

    def _refused(self, response):
        """A server of `auth` answered 401 to the person's token (it expired, or was revoked): OAuthError
        saying so; the Aggregator then has the gateway refuse the token too (Person.refuse)."""
        params = www_authenticate(response.getheader("WWW-Authenticate") or "")
        response.read()
        self.upstream.refuse_bearer()
        exchanged = self.spec.person_token == "exchange"
        return OAuthError("server %s refused %s (HTTP 401%s): sign in to the gateway again (your MCP client does when "
                          "the gateway answers 401 invalid_token, as it will now)%s" % (
                              self.spec.key, "the token exchanged for yours" if exchanged else "your access token",
                              ": " + (params.get("error_description") or params["error"]) if params.get("error") else "",
                              "" if exchanged else ", with a token issued for %s too" % self.spec.url))

    def _param_headers(self, name, arguments):
        """SEP-2243: the arguments a tool's schema marks with `x-mcp-header`, as `Mcp-Param-*` headers."""
        tools = _object(self.upstream.listing).get("tools") or ()
        return {"Mcp-Param-" + header: _encode_header(text) for header, text in param_texts(
            next((t for t in tools if t.get("name") == name), None), arguments).items() if text is not None}

    def _deliver(self, message, related=None):
        if isinstance(message, dict) and not self.closed:
            self.loop.call_soon_threadsafe(self.upstream.client.received_message, message, related)

    def _fail(self, reason):
        if not self.closed:
            self.loop.call_soon_threadsafe(self.upstream.lost, self, reason)

    @staticmethod
    def _events(response, seen):
        """(event, data) of an SSE body, as they arrive; `seen` (a dict) keeps the stream's last
        event `id` and `retry` (milliseconds), what resuming it takes (SEP-1699)."""
        event, data = "message", []
        for line in iter(response.readline, b""):
            line = _decoded(line).rstrip("\r\n")
            field, _, value = line.partition(":")
            value = value[1:] if value[:1] == " " else value
            if not line:
                if data:
                    yield event, "\n".join(data)
                event, data = "message", []
            elif field == "data":
                data.append(value)
            elif field == "event":
                event = value.strip()
            elif field == "id" and "\0" not in value:
                seen["id"] = value
            elif field == "retry" and value.isdigit():
                seen["retry"] = int(value)

    def _answered(self, response, request_id, seen):
        """Deliver what a POST's SSE stream carries; whether the answer to `request_id` was among it."""
        for _, data in self._events(response, seen):
            try:
                message = json.loads(data)
            except BAD_JSON:
                continue
            self._deliver(message, request_id)  # on this request's stream: it belongs to this request
            if isinstance(message, dict) and "method" not in message and message.get("id") == request_id:
                return True  # the stream has nothing more for us (a resumed GET stream may stay open)
        return False

    # -- the transport's operations -------------------------------------------------------

    async def open(self):
        if self.spec.transport != "sse":
            return
        ready = self.loop.create_future()
        threading.Thread(target=self._listen, args=(ready,), daemon=True).start()
        await ready

    def _listen(self, ready):
        """The HTTP+SSE transport: read the GET stream for good."""
        import urllib.parse

        def settle(error=None, endpoint=None):
            def set_it():
                if not ready.done():
                    ready.set_exception(error) if error else ready.set_result(endpoint)
            self.loop.call_soon_threadsafe(set_it)
        try:
            connection, target = self._connection(self.spec.url, self.spec.startup_timeout)
            connection.request("GET", target, headers=dict(self._headers(url=self.spec.url), Accept="text/event-stream"))
            self.stream = connection.sock  # kept: http.client lets go of it when the reply has no length
            response = connection.getresponse()
            if response.status != 200:
                raise OSError("GET %s answered HTTP %d" % (self.upstream.log.mask(self.spec.url), response.status))
            self.stream.settimeout(None)  # a stream: quiet for as long as the server likes
            for event, data in self._events(response, {}):
                if event == "endpoint":
                    endpoint = urllib.parse.urljoin(self.spec.url, data.strip())
                    if _origin(endpoint) != _origin(self.spec.url):  # the config's headers would go there
                        raise OSError("its endpoint event names another origin (%s); refusing to send there"
                                      % _origin(endpoint))
                    self.post_url = endpoint
                    settle(endpoint=endpoint)
                elif event == "message":
                    try:
                        self._deliver(json.loads(data))
                    except BAD_JSON:
                        pass
            raise OSError("the server closed its event stream")
        except Exception as exc:  # the thread's boundary: report, never raise
            settle(error=OSError(str(exc)))
            self._fail("its event stream ended: %s" % exc)

    def _event_stream(self, last_event_id, request_id=None):
        """GET the session's event stream: the standalone one, or the stream of request `request_id` resumed
        after `last_event_id` (SEP-1699). (connection, response); the response is None when the server
        offers no stream there."""
        headers = dict(self._headers({}), Accept="text/event-stream")
        del headers["Content-Type"]
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        connection, target = self._connection(self.post_url, self.spec.startup_timeout)
        connection.request("GET", target, headers=headers)
        sock = connection.sock  # kept: http.client lets go of it when the reply has no length
        if request_id is None:
            self.stream = sock
        else:
            sock.settimeout(None)  # the request's own timer (toolTimeout) ends the wait
            self.connections[request_id] = sock
        response = connection.getresponse()
        if response.status != 200 or "text/event-stream" not in (response.getheader("Content-Type") or ""):
            return connection, None
        sock.settimeout(None)  # a stream: quiet for as long as the server likes
        return connection, response

    def _standalone(self):
        """The session's GET stream: what the server sends outside any request (its own requests, such as an
        elicitation of a tool that names no request, and notifications); resumed with Last-Event-ID when it
        ends, while it brings events; a server without one (405) is left alone."""
        import http.client
        seen, quiet = {}, 0
        while not self.closed and quiet < 3:
            events = 0
            try:
                connection, response = self._event_stream(seen.get("id"))
                if response is None:
                    connection.close()
                    return
                for _, data in self._events(response, seen):
                    events += 1
                    try:
                        self._deliver(json.loads(data))
                    except BAD_JSON:
                        pass
                connection.close()
            except (OSError, http.client.HTTPException):
                pass
            quiet = 0 if events else quiet + 1
            if not self.closed:
                time.sleep(min(seen.get("retry", 1000), HTTP_RESUME_WAIT_MS) / 1000)

    def send(self, message):
        if not self.closed:
            threading.Thread(target=self._post, args=(message,), daemon=True).start()

    def _post(self, message):
        import http.client
        method = message.get("method")
        request_id = message.get("id") if "method" in message else None
        connection = None
        try:
            with self.sending:  # in order: `initialized` before `tools/list`, a request before its cancel
                tries = 0
                while True:
                    headers = self._headers(message)
                    connection, target = self._connection(self.post_url, self.spec.startup_timeout)
                    connection.request("POST", target, body=json.dumps(message).encode(), headers=headers)
                    if request_id is not None:
                        connection.sock.settimeout(None)  # the request's own timer (toolTimeout) ends the wait
                        self.connections[request_id] = connection.sock
                        if request_id in self.aborted:
                            self.abort(request_id)
                    response = connection.getresponse()
                    if response.status == 401 and self.upstream.bearer:
                        raise self._refused(response)
                    if response.status not in (401, 403) or not self.oauth or tries >= OAUTH_STEP_UPS:
                        break
                    challenge = response.getheader("WWW-Authenticate") or ""
                    if not www_authenticate(challenge) and response.status == 403:
                        break  # a refusal, not a challenge
                    response.read()
                    connection.close()
                    tries += 1
                    self.oauth.challenge(response.status, challenge, tries, headers.get("Authorization"))
                if request_id is None:  # a notification: accepted before the next leaves
                    response.read()
                    if method == "notifications/initialized" and self.spec.transport == "http" \
                            and self.session_id:
                        threading.Thread(target=self._standalone, daemon=True).start()
                    return
            if method == "initialize" and response.getheader("Mcp-Session-Id"):
                self.session_id = response.getheader("Mcp-Session-Id").strip()
            if response.status == 202:
                response.read()
                return
            if response.status == 404 and self.session_id and method != "initialize" \
                    and META_VERSION not in _object(_object(message.get("params")).get("_meta")):
                response.read()
                self._fail("its session ended (HTTP 404)")
                return
            if "text/event-stream" in (response.getheader("Content-Type") or "").lower():
                seen, tried = {}, False
                answered = self._answered(response, request_id, seen)
                # A server may close the stream before it answers (SEP-1699): resume it with a GET that
                # names the last event seen, after the `retry` it asked for, while each try brings events.
                while not answered and request_id is not None and "id" in seen and request_id not in self.aborted:
                    if not tried:
                        self.loop.call_soon_threadsafe(self.upstream.back.stream_paused, request_id)
                    last, tried = seen.pop("id"), True
                    time.sleep(min(seen.get("retry", 1000), HTTP_RESUME_WAIT_MS) / 1000)
                    connection.close()
                    connection, response = self._event_stream(last, request_id)
                    if response is None:
                        break
                    answered = self._answered(response, request_id, seen)
                if not answered and request_id is not None and request_id not in self.aborted and not self.closed:
                    # The call is lost, not answered: an isError result of this call only (its other calls
                    # go on), in mcpstudio's words, as when the server cannot answer (not "[server] ...").
                    self.loop.call_soon_threadsafe(
                        self.upstream.client.fail, request_id, SERVER_ANSWER_LOST,
                        "server `%s` closed its event stream of %s before it answered %s" % (
                            self.spec.key, method, "(resuming it with Last-Event-ID brought no answer)" if tried
                            else "(and gave no event id to resume it with)"))
                return
            body = response.read()
            reply = _object(self._json_body(body))
            if "error" in reply and reply.get("id") is None:
                reply = dict(reply, id=request_id)  # an HTTP error's reply: it answers the request it came back on
            if not ("result" in reply or "error" in reply):
                reply = _error_response(request_id, McpError(
                    METHOD_NOT_FOUND if response.status in (404, 405) else INTERNAL_ERROR,
                    "HTTP %d %s" % (response.status, _clip(_decoded(body), 200))))
            self._deliver(reply)
        except OAuthError as exc:  # this request fails, saying how to sign in; the server stays up
            if request_id is not None:
                self._deliver(_error_response(request_id, McpError(SERVER_SIGN_IN, str(exc))))
            else:
                self.upstream.server_log.note("%s was not sent: %s" % (method, exc))
        except (OSError, http.client.HTTPException) as exc:
            if request_id is not None and request_id not in self.aborted:  # not cancelled on purpose
                self._fail("the connection failed: %s" % (exc or type(exc).__name__))
        finally:
            if request_id is not None:
                self.connections.pop(request_id, None)
                self.aborted.discard(request_id)
            if connection:
                connection.close()

    def _json_body(self, body):
        """The reply in a JSON body; a body of several messages, one a line (some servers send their
        notifications so), has the others delivered first."""
        try:
            return json.loads(body)
        except BAD_JSON:
            pass
        reply = None
        for line in body.splitlines():
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except BAD_JSON:
                return None
            if isinstance(message, dict) and ("result" in message or "error" in message):
                reply = message
            else:
                self._deliver(message)
        return reply

    def abort(self, request_id):
        """Close the connection a request waits on (how 2026-07-28 cancels over HTTP)."""
        self.aborted.add(request_id)
        sock = self.connections.pop(request_id, None)
        if sock:
            try:
                sock.shutdown(2)
            except OSError:
                pass

    def close(self):
        """End the session (DELETE, best effort) and every connection."""
        if self.closed:
            return
        self.closed = True
        if self.session_id and self.spec.transport != "sse":
            def delete():
                try:
                    connection, target = self._connection(self.post_url, 5)
                    connection.request("DELETE", target, headers=self._headers({}))
                    connection.getresponse().read()
                    connection.close()
                except Exception:  # best effort: the server may be gone
                    pass
            threading.Thread(target=delete, daemon=True).start()
        for request_id in list(self.connections):
            self.abort(request_id)
        if self.stream:
            try:
                self.stream.shutdown(2)
            except OSError:
                pass


STRAY_LINE = "skipped a line on stdout that is not JSON-RPC: "  # the server log's note of one (ServerLog.stray)


class RpcClient:
    """The client side of JSON-RPC with one server, the mirror of `Session`: ids, futures, timeouts, cancellation.

    Its channel (a child's stdio, `_UpstreamProtocol`, or HTTP, `_HttpChannel`) has `send(message)`,
    `abort(request_id)` and `reason` (why it ended, once it has), and hands what arrives to `received`
    (a line) or `received_message`. Answers settle the futures of `request`; the server's own
    requests and notifications go to `on_message`.
    """

    channel = None
    next_id = 0
    meta = None  # added to every request's _meta (a 2026-07-28 server), or None
    ended = None  # what fail_all told the waiting requests when the last channel ended, until the next attach

    def __init__(self, name, on_message, note):
        self.name = name              # the server's id, for error messages
        self.on_message = on_message
        self.note = note              # a line for the server's log
        self.pending = {}             # our request id -> future
        self.causes = {}              # our request id -> the CallContext of the client's request it serves

    def attach(self, channel):
        """Talk through `channel` from now on (a new start or connection); return it."""
        self.channel, self.ended = channel, None
        return channel

    def detach(self, channel):
        """`channel` ended: talk through nothing, unless a newer channel has been attached meanwhile."""
        if self.channel is channel:
            self.channel = None

    def new_id(self):
        """The next request id (ours: an upstream never sees the client's ids)."""
        self.next_id += 1
        return self.next_id

    def send(self, message):
        """Write one message on the channel, when there is one."""
        if self.channel:
            self.channel.send(message)

    def request(self, method, params, timeout=None, cause=None):
        """Send a request (made for `cause`, a client's CallContext); the returned awaitable resolves to its
        result or raises UpstreamError."""
        request_id = self.new_id()
        if cause:
            self.causes[request_id] = cause
        future = asyncio.get_running_loop().create_future()
        channel = self.channel
        if not channel or channel.reason is not None:  # it ended before we asked (a task's poll, while it slept)
            future.set_exception(UpstreamError(SERVER_NOT_RUNNING, self.ended or "server `%s` %s" % (
                self.name, channel.reason if channel else "is not running"), {"server": self.name}))
        else:
            if self.meta is not None:  # 2026-07-28: every request says its version and capabilities
                params = dict(params, _meta=dict(self.meta, **_object(params.get("_meta"))))
            self.pending[request_id] = future
            self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return self._await(request_id, future, method, timeout)

    async def _await(self, request_id, future, method, timeout):
        timer = None
        if timeout:
            timer = asyncio.get_running_loop().call_later(timeout, self._time_out, request_id, future, method, timeout)
        try:
            return await future
        except asyncio.CancelledError:
            if request_id in self.pending:
                self._cancel(request_id, method, "cancelled by the client")
            raise
        finally:
            if timer:
                timer.cancel()
            self.pending.pop(request_id, None)
            self.causes.pop(request_id, None)

    def _cancel(self, request_id, method, reason):
        """Tell the server a request is given up: its HTTP connection is closed (how 2026-07-28 cancels over
        HTTP; never the server's others), and notifications/cancelled says why (never for initialize: the spec)."""
        if self.channel:
            self.channel.abort(request_id)
        if method != "initialize":
            self.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": request_id, "reason": reason}})

    def _time_out(self, request_id, future, method, timeout):
        if not future.done():
            self._cancel(request_id, method, "timed out after %g s" % timeout)
            future.set_exception(UpstreamError(SERVER_TIMEOUT, "server `%s` did not answer %s within %g s"
                                               % (self.name, method, timeout), {"server": self.name}))

    def fail(self, request_id, code, text):
        """Fail one waiting request (its answer cannot arrive)."""
        future = self.pending.get(request_id)
        if future and not future.done():
            future.set_exception(UpstreamError(code, text, {"server": self.name}))

    def fail_all(self, code, text):
        """Fail every waiting request at once (the server ended or was stopped); a request made later, before
        the next start, is told the same."""
        self.ended = text
        for request_id in list(self.pending):
            self.fail(request_id, code, text)
        self.pending.clear()

    def received(self, line):
        """One line from the server: parsed and handled; junk is logged and skipped."""
        try:
            message = json.loads(line)
        except BAD_JSON:  # nested too deeply is not JSON-RPC either
            message = None
        if isinstance(message, dict):
            self.received_message(message)
        else:
            self.note(STRAY_LINE + _clip(_decoded(line[:400]), 200))

    def received_message(self, message, related=None):
        """One message: a notification or request goes on (with the CallContext of our request `related`,
        when it came on that request's stream); a reply settles its request."""
        if message.get("method") is not None:
            if isinstance(message["method"], str):
                self.on_message(message, self.causes.get(related))
            return
        request_id = message.get("id")
        future = self.pending.get(request_id) if isinstance(request_id, int) else None  # ours are; [1] is no key
        if future and not future.done():
            if "error" in message:
                error = _object(message["error"])
                future.set_exception(UpstreamError(
                    error.get("code") if isinstance(error.get("code"), int) else INTERNAL_ERROR,
                    "[%s] %s" % (self.name, error.get("message", "error")), error.get("data")))
            else:
                future.set_result(_object(message.get("result")))


# (capability, method, key) of each listing a server with the capability answers.
LISTINGS = (("tools", "tools/list", "tools"), ("resources", "resources/list", "resources"),
            ("resources", "resources/templates/list", "resourceTemplates"), ("prompts", "prompts/list", "prompts"))


class McpClient(RpcClient):
    """MCP over an RpcClient: the handshake (or a 2026-07-28 server's discovery), and listings page by page."""

    dual = False  # initialized, it answers 2026-07-28 requests too (see `probe`)

    def __init__(self, name, on_message, note):
        super().__init__(name, on_message, note)
        self.capabilities, self.server_info, self.protocol_version = {}, {}, None
        self.offered = {}  # the client capabilities it declares: those of the client mcpstudio serves
        self.modern_only = set()  # names of the tools and prompts it lists only to 2026-07-28 requests

    @property
    def modern(self):
        """It speaks only 2026-07-28 (found when initialize is refused): every request carries _meta."""
        return self.meta is not None

    @modern.setter
    def modern(self, value):
        self.meta = self.modern_meta(self.offered) if value else None

    @staticmethod
    def modern_meta(capabilities):
        """The `_meta` that makes a request a 2026-07-28 one, declaring `capabilities`."""
        return {META_VERSION: MODERN_VERSIONS[0], META_CAPABILITIES: capabilities,
                "io.modelcontextprotocol/clientInfo": {"name": "mcpstudio", "version": __version__}}

    async def probe(self, timeout):
        """After a handshake: whether the server also serves 2026-07-28 requests (`server/discover`), so that
        those of a 2026-07-28 client reach it in their own era (and what it offers only there is listed)."""
        try:
            result = await self.request("server/discover", {"_meta": self.modern_meta(self.offered)}, timeout)
        except UpstreamError:
            return
        self.dual = MODERN_VERSIONS[0] in (result.get("supportedVersions") or ())

    async def open(self, version=None, offered=None):
        """initialize and initialized; or, refused, server/discover (the 2026-07-28 era has no handshake),
        declaring `offered` (the client capabilities of the client mcpstudio serves).

        `version` (the config's `protocolVersion`) pins the era: 2026-07-28 asks server/discover only, so the
        server never sees an `initialize`; a handshake version is the only one offered, with no fallback."""
        self.offered, self.dual, self.modern_only = offered or {}, False, set()  # a new connection's
        if version in MODERN_VERSIONS:
            await self._discover(None)
            return
        self.modern = False
        try:
            result = await self.request("initialize", {
                "protocolVersion": version or LATEST_PROTOCOL_VERSION, "capabilities": self.offered,
                "clientInfo": {"name": "mcpstudio", "version": __version__}})
        except UpstreamError as exc:
            if exc.code in (SERVER_NOT_RUNNING, SERVER_TIMEOUT, SERVER_SIGN_IN) or version:
                raise
            await self._discover(exc)
            return
        self.protocol_version = result.get("protocolVersion")
        if self.protocol_version not in PROTOCOL_VERSIONS:
            self.note("it answered protocol %r, which mcpstudio does not know; going on" % self.protocol_version)
        self.capabilities = _object(result.get("capabilities"))
        self.server_info = _object(result.get("serverInfo"))
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def _discover(self, refusal):
        self.modern = True
        refused = refusal.message if refusal else "not tried"
        try:
            try:
                result = await self.request("server/discover", {})
            except UpstreamError as exc:  # -32022 lists what it serves: again, if ours is among them
                if exc.code != UNSUPPORTED_VERSION or MODERN_VERSIONS[0] not in (_object(exc.data).get("supported") or ()):
                    raise
                result = await self.request("server/discover", {})
        except UpstreamError as exc:
            self.modern = False
            raise UpstreamError(exc.code, "it refused initialize (%s) and server/discover (%s)" % (refused, exc.message))
        if MODERN_VERSIONS[0] not in (result.get("supportedVersions") or ()):
            self.modern = False
            raise UpstreamError(INTERNAL_ERROR, "it refused initialize (%s) and supports none of %s"
                                % (refused, ", ".join(MODERN_VERSIONS)))
        self.protocol_version = MODERN_VERSIONS[0]
        self.capabilities = _object(result.get("capabilities"))
        self.server_info = _object(_object(result.get("_meta")).get(META_SERVER_INFO) or result.get("serverInfo"))

    async def listing(self, timeout):
        """Its tools, resources, resource templates and prompts (what it has the capability for)."""
        listing = {}
        for capability, method, key in LISTINGS:
            listing[key] = []
            if capability in self.capabilities:
                try:
                    listing[key] = await self.list_all(method, key, timeout)
                except UpstreamError as exc:
                    if key == "tools" and exc.code != METHOD_NOT_FOUND:
                        raise
                    self.note("%s failed: %s" % (method, exc.message))  # the rest still works
            if self.dual and key in ("tools", "prompts"):  # and what it offers only to 2026-07-28 requests
                try:
                    modern = await self.list_all(method, key, timeout, self.modern_meta(self.offered))
                except UpstreamError as exc:
                    self.note("%s (2026-07-28) failed: %s" % (method, exc.message))
                    modern = []
                known = {item["name"] for item in listing[key]}
                extra = [item for item in modern if item["name"] not in known]
                self.modern_only.update(item["name"] for item in extra)
                listing[key] += extra
        listing["serverInfo"] = self.server_info
        listing["skills"] = _object(self.capabilities.get("extensions")).get(SKILLS_EXTENSION)  # asked when a client asks
        return listing

    async def list_all(self, method, key, timeout, meta=None):
        """Every page of a listing (`tools/list` and the like), up to 1,000 pages (with `meta`: 2026-07-28)."""
        items, cursor = [], None
        for _ in range(1000):
            params = {"cursor": cursor} if cursor else {}
            if meta is not None:
                params["_meta"] = meta
            result = await self.request(method, params, timeout)
            page = result.get(key)
            if not isinstance(page, list):
                raise UpstreamError(INTERNAL_ERROR, "server `%s`: its %s answer has no `%s` list" % (self.name, method, key))
            for item in page:
                name = item.get("name", item.get("uri")) if isinstance(item, dict) else None
                if isinstance(name, str) and len(json.dumps(item)) > UPSTREAM_MAX_ITEM:
                    self.note("lists %s of more than 64 KiB (description and schemas): left out" % json.dumps(name[:80]),
                              True)
                elif isinstance(name, str):
                    items.append(item)
            cursor = result.get("nextCursor")
            if not cursor:
                break
            if len(items) >= UPSTREAM_MAX_ITEMS:
                self.note("lists more than %d %s: the rest are left out" % (UPSTREAM_MAX_ITEMS, key), True)
                break
        return items[:UPSTREAM_MAX_ITEMS]


class ListingCache:
    """One upstream's listing on disk, so that a listing starts nothing: read safely, written atomically."""

    def __init__(self, path, log: Log):
        self.path = path
        self.log = log

    def read(self):
        """The cached listing, or None (no cache, or one that is not a listing: logged, ignored).

        Only a regular file of at most UPSTREAM_CACHE_MAX bytes is read (a FIFO or a device at the
        path is not waited on), and only a listing of the expected shape is used."""
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return None
        try:
            with open(fd, "rb") as f:  # closes fd
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode) or info.st_size > UPSTREAM_CACHE_MAX:
                    raise ValueError("not a regular file of at most %d bytes" % UPSTREAM_CACHE_MAX)
                data = f.read(UPSTREAM_CACHE_MAX + 1)
            if len(data) > UPSTREAM_CACHE_MAX:
                raise ValueError("larger than %d bytes" % UPSTREAM_CACHE_MAX)
            entry = json.loads(data.decode("utf-8"))
            problem = self._shape(entry)
            if problem:
                raise ValueError(problem)
            return entry
        except (OSError, ValueError, RecursionError) as exc:
            if self.log:
                self.log.warning("ignoring the tools cache %s: %s", self.path, _clip(str(exc) or type(exc).__name__, 200))
            return None

    @staticmethod
    def _shape(entry):
        """What is wrong with a cache entry's shape, or ''."""
        if not isinstance(entry, dict):
            return "it holds a JSON %s, not a listing" % _type_name(entry)
        if entry.get("format") != UPSTREAM_CACHE_FORMAT:
            return "format %r, not %d" % (_clip(str(entry.get("format")), 20), UPSTREAM_CACHE_FORMAT)
        for key, name_key in (("tools", "name"), ("resources", "uri"), ("resourceTemplates", "uriTemplate"),
                              ("prompts", "name")):
            items = entry.get(key, [])
            if not isinstance(items, list) or not all(isinstance(i, dict) and isinstance(i.get(name_key), str)
                                                      for i in items):
                return "`%s` is not a list of objects with a `%s`" % (key, name_key)
        if not isinstance(entry.get("serverInfo", {}), dict):
            return "`serverInfo` is not an object"
        return ""

    def write(self, listing, server_key):
        """Save a server's listing for the next start (errors are logged, never raised)."""
        try:
            write_private_json(self.path, dict(listing, format=UPSTREAM_CACHE_FORMAT, server=server_key, saved=time.time()))
        except OSError as exc:
            self.log.debug("cannot write the tools cache %s: %s", self.path, exc)


class ServerLog:
    """One upstream's own log: lifecycle notes and stderr lines, kept for `server_logs` and error messages."""

    def __init__(self, server_id, log: Log):
        self.server_id, self.log = server_id, log
        self.lines = collections.deque(maxlen=LOG_LINES)
        self.recent = collections.deque(maxlen=5)  # stderr lines of the current run, for error messages
        self.stray = None  # the current run's last line on stdout that is not JSON-RPC (a banner, a print)

    def restart(self):
        """A new run of the server begins: what the last one wrote no longer explains a failure."""
        self.recent.clear()
        self.stray = None

    def note(self, text, warn=False):
        """A lifecycle line: to the server's log ring, and to mcpstudio's debug log (or a warning, said once)."""
        self.lines.append("%s mcpstudio: %s" % (time.strftime("%H:%M:%S"), text))
        if text.startswith(STRAY_LINE):
            self.stray = text[len(STRAY_LINE):]
        if warn:
            self.log.warn_once("server `%s` %s", self.server_id, text)
        else:
            self.log.debug("[%s] %s", self.server_id, text)

    def stderr_line(self, text):
        """One line of the server's stderr: kept for server_logs and error messages."""
        self.lines.append("%s stderr: %s" % (time.strftime("%H:%M:%S"), text))
        self.recent.append(text)
        if self.log.enabled:
            self.log.debug("[%s] %s", self.server_id, text)

    def tail(self, besides=None):
        """The current run's last stderr lines, masked, for an error message (or ''); `besides`: a line the
        message shows already, left out here (once is enough)."""
        tail = [self.log.mask(line) for line in self.recent if line.strip() and line.strip() != besides]
        stray = ("; it wrote on stdout, where only JSON-RPC messages may go: %s (a server logs to stderr)"
                 % self.log.mask(self.stray) if self.stray else "")
        return stray + ("; its last stderr lines: %s" % " | ".join(tail)[-800:] if tail else "")

    def why(self, reason):
        """`reason` (exited with code 3) after the last stderr line, which most often says why, where a screen's
        edge would cut it; then the last lines."""
        last = next((line.strip() for line in reversed(self.recent) if line.strip()), "")
        return "%s (it %s)%s" % (self.log.mask(last), reason, self.tail(besides=last)) if last else reason


class RestartBackoff:
    """A server's failed starts and crashes in a row, and how long the next start waits for them."""

    failures = 0  # in a row: the backoff grows with them
    failed_at = 0.0

    def failed(self):
        """A start failed, or the server stopped answering: one more in a row."""
        self.failures += 1
        self.failed_at = time.monotonic()

    def crashed(self, uptime):
        """The running server ended after `uptime` seconds: after a minute's run the count starts again."""
        self.failures = 1 if uptime > 60 else self.failures + 1
        self.failed_at = time.monotonic()

    def delay(self):
        """Seconds to wait before the next start may begin: none after a first failure, then growing."""
        if self.failures < 2:
            return 0.0
        delay = min(BACKOFF_FIRST * 2 ** (self.failures - 2), BACKOFF_MAX)
        return max(0.0, self.failed_at + delay - time.monotonic())


class Downstream:
    """The client side of an aggregator, as its upstreams see it: the client served (stdio; over --http the first
    one), what it offers, the log level it set, and where the servers' changes and log lines go."""

    session = None
    log_level = None  # the level the client set with logging/setLevel, passed on to every server

    def __init__(self, source, bridge):
        self.source = source    # the Aggregator: the catalog knows the source by it and hands it its events
        self.bridge = bridge    # an InputBridge: a handshake-era server's questions to a 2026-07-28 client

    def started(self, session):
        """`session` finished `initialize`: it is the client served, unless one still open is. Over --http several
        clients may share the servers: they are offered what the first one offers, and each server's request goes
        to the client whose call caused it (refused if that one lacks it)."""
        if not self.session or self.session.closed:
            self.session = session

    def chose_level(self, level):
        """The client served set `level` with logging/setLevel: every server is told it."""
        self.log_level = level

    def offered(self):
        """The client capabilities an upstream is told of: exactly those of mcpstudio's own client."""
        return dict(self.session.client_capabilities) if self.session else {}

    def sessions(self):
        """The handshake-era sessions past `initialized`, at /mcp and at every namespace's URL."""
        server = self.source.events
        found = list(getattr(server, "sessions", ()))
        for view in getattr(server, "views", ()):
            found += getattr(view.events, "sessions", [])
        return found

    def changed(self):
        """The tool set changed (a server listed, a reload): tell the catalog."""
        if self.source.events:
            self.source.events.source_changed(self.source)

    def forward_log(self, level, data, logger, owner=None):
        """A log line from an upstream, forwarded with the server id as logger; `owner`: an isolated process's
        (Upstream.owner), whose lines only that person's (or session's) sessions are told."""
        if self.source.events:
            self.source.events.source_log(level, data, logger, owner)

    def updated(self, params, owner=None):
        """A server's `notifications/resources/updated`: the client's subscription, passed on (an isolated
        process's only to its owner)."""
        if self.source.events:
            self.source.events.source_notification("notifications/resources/updated", params, owner)


LISTEN_AGAIN = 2.0                # seconds before a 2026-07-28 server's ended subscriptions/listen is opened again


class ListenStream:
    """A 2026-07-28 server's `subscriptions/listen`. Such a server has no unsolicited notifications: mcpstudio
    asks for its list changes and the updates of the resources the client subscribed to (again when those
    change). Its notifications then go where a handshake-era server's do (BackChannel)."""

    task = None  # the listen request, while the server runs

    def __init__(self, client, server_log, *, state):
        """Its server's McpClient and ServerLog; `state` a callable, as the Upstream's state changes as it runs."""
        self.client, self.server_log, self.state = client, server_log, state
        self.watched = set()   # resource URIs the client subscribed to (the server hears of them at listen)

    def open(self):
        """Listen (again) while the server runs, for what it can tell of."""
        self.close()
        capabilities = self.client.capabilities
        wanted = {"%sListChanged" % kind: True for kind in ("tools", "resources", "prompts")
                  if _object(capabilities.get(kind)).get("listChanged")}
        if self.watched and _object(capabilities.get("resources")).get("subscribe"):
            wanted["resourceSubscriptions"] = sorted(self.watched)
        if self.client.modern and self.state() == "running" and wanted:
            self.task = asyncio.ensure_future(self._listening(wanted))

    async def _listening(self, wanted):
        try:
            while self.state() == "running":
                try:
                    await self.client.request("subscriptions/listen", {"notifications": wanted})
                    self.server_log.note("subscriptions/listen ended: opening it again")
                except UpstreamError as exc:
                    self.server_log.note("subscriptions/listen failed: %s" % exc.message)
                    if exc.code in (METHOD_NOT_FOUND, INVALID_PARAMS, SERVER_NOT_RUNNING):
                        return
                await asyncio.sleep(LISTEN_AGAIN)
        except asyncio.CancelledError:
            pass

    async def watch(self, uri, on):
        """resources/subscribe (`on`) or unsubscribe for a 2026-07-28 server: its listen is opened again."""
        (self.watched.add if on else self.watched.discard)(uri)
        self.open()
        return {}

    def close(self):
        if self.task:
            self.task.cancel()
            self.task = None

    def waiting(self):
        """Whether the listen request is in flight (it stays pending while the server runs)."""
        return self.task is not None and not self.task.done()


class BackChannel:
    """What a server sends of its own accord: its requests (sampling, elicitation, roots) put to the client of the
    call that caused them, and its progress, log lines and changes passed on."""

    def __init__(self, client: McpClient, downstream: Downstream, log: Log, server_id, owner, *, state, timeout, relist):
        """`client`: the server's, which hands the server's messages here and takes the answers; `owner`:
        Upstream.owner; `state()`: the server's state (running, ...), `timeout()`: its toolTimeout (a reload may
        change it), `relist()`: list it again."""
        self.client, self.downstream, self.log = client, downstream, log
        self.server_id, self.owner = server_id, owner
        self.state, self.timeout, self.relist = state, timeout, relist
        self.asking = {}    # id of a request the server sent us -> the task asking mcpstudio's client
        self.calls = []     # CallContexts of the requests forwarded to it, in flight
        self.progress = {}  # our progress token -> the client's CallContext
        self.tasks = {}     # id of the server's own task a call of ours made -> that call's CallContext
        self.shown = collections.OrderedDict()  # elicitationId of a URL the server had a client shown -> its Session
        self.notices = {}   # the token bucket of its log and progress notifications (UPSTREAM_NOTICES a second)

    def message(self, message, cause=None):
        """A request or notification from the server (`cause`: the CallContext of the call whose stream
        it came on, over HTTP: a log line there is that call's, never another session's)."""
        method = message["method"]
        params = _object(message.get("params"))
        if "id" in message and method == "ping":
            self.client.send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        elif "id" in message:  # sampling, elicitation, roots: asked of mcpstudio's client
            request_id = message["id"]
            if isinstance(request_id, ID_TYPES) and request_id not in self.asking:
                refusal = None
                try:  # the call it belongs to, as things stand when it arrives
                    cause = cause or self._cause(method, params)
                except McpError as exc:
                    refusal = exc
                self.asking[request_id] = asyncio.ensure_future(self._ask_client(request_id, method, params, cause,
                                                                                 refusal))
        elif method in DROPPABLE and take_token(self.notices, [("", UPSTREAM_NOTICES, 1.0)], time.monotonic())[1]:
            self.log.warn_once("server `%s` sends more than %d log or progress notifications a second: the rest are "
                               "dropped", self.server_id, UPSTREAM_NOTICES)
        elif method == "notifications/cancelled":
            asking = self.asking.get(params.get("requestId")) if isinstance(params.get("requestId"), ID_TYPES) else None
            if asking:
                asking.cancel()
        elif method == "notifications/resources/updated":
            self.downstream.updated(params, self.owner)
        elif method == "notifications/elicitation/complete":
            self._complete(method, params)
        elif method == "notifications/progress":
            token = params.get("progressToken")
            ctx = self.progress.get(token) if isinstance(token, ID_TYPES) else None  # a list cannot be a key
            if ctx and isinstance(params.get("progress"), NUMBER):
                ctx.progress(params["progress"], params.get("total"), params.get("message"))
        elif method == "notifications/message":
            level = params.get("level") if params.get("level") in LOG_LEVELS else "info"
            if cause is not None:  # on the stream of a call: that call's, told its client alone (its own stream)
                cause.log(level, params.get("data"), self.server_id)
            else:
                self.downstream.forward_log(level, params.get("data"), self.server_id, self.owner)  # the id as logger
        elif method.endswith("/list_changed") and self.state() == "running":
            self.relist()

    def _cause(self, method, params):
        """The call a request of the server's belongs to when no stream says (stdio): the one whose progress token
        or server task (io.modelcontextprotocol/related-task) its `_meta` names; else the latest call in flight,
        if every call in flight is one person's. Calls of several people: McpError (refused, never guessed)."""
        meta = _object(params.get("_meta"))
        token, task = meta.get("progressToken"), _object(meta.get(RELATED_TASK)).get("taskId")
        if isinstance(token, ID_TYPES) and token in self.progress:
            return self.progress[token]
        if isinstance(task, str) and task in self.tasks:
            return self.tasks[task]
        people = {getattr(ctx.session, "person", None) for ctx in self.calls if ctx is not None}
        if len(people) > 1:
            self.log.warning("server `%s` sent %s during calls of %d people, naming none of them: refused (whose it "
                             "is cannot be told)", self.server_id, method, len(people))
            raise McpError(INVALID_REQUEST, "mcpstudio cannot tell whose call this %s belongs to: calls of several "
                           "people are in flight and it names none (send it on the call's own stream, or with the "
                           "call's progressToken in _meta), so it is refused rather than put to the wrong person"
                           % method)
        return self.calls[-1] if self.calls else None

    def _outside_calls(self, method):
        """Whom what the server sends outside any call goes to: mcpstudio's client (over --http the first), or for
        an isolated process one of its owner's sessions. McpError when sessions of several people could be meant
        (it is refused, never guessed)."""
        owner = self.owner
        sessions = [s for s in self.downstream.sessions() if not s.closed and owned_by(s, owner)]
        people = {session.person for session in sessions}
        if len(people) > 1:
            self.log.warning("server `%s` sent %s outside any call while %d people are connected: refused (whose it "
                             "is cannot be told)", self.server_id, method, len(people))
            raise McpError(INVALID_REQUEST, "mcpstudio cannot tell whom this %s is for: it came outside any call "
                           "while several people are connected, so it is refused rather than put to the wrong "
                           "person" % method)
        first = self.downstream.session
        if owner is None or first in sessions:
            return first
        return sessions[0] if sessions else None

    def showing(self, elicitations, session):
        """URL elicitations (their `elicitationId`s) shown to `session`: their elicitation/complete goes there."""
        for elicitation in elicitations if session is not None else ():
            key = _object(elicitation).get("elicitationId")
            if isinstance(key, str):
                self.shown[key] = session
                while len(self.shown) > SHOWN_ELICITATIONS:
                    self.shown.popitem(last=False)

    def _complete(self, method, params):
        """The server's notifications/elicitation/complete: to the session its URL was shown to; an unknown one
        as what comes outside any call (dropped when several people could be meant)."""
        key = params.get("elicitationId")
        session = self.shown.pop(key, None) if isinstance(key, str) else None
        if session is None:
            try:
                session = self._outside_calls(method)
            except McpError:
                return
        if session and not session.closed:
            session.notify(method, params)

    async def _ask_client(self, request_id, method, params, cause, refusal=None):
        """Put a request of the server's to the client of the call that caused it (`cause`, a CallContext: see
        _cause), else to mcpstudio's client (_outside_calls); send the answer (or `refusal`, an McpError) back under
        the server's id."""
        reply = {"jsonrpc": "2.0", "id": request_id}
        try:
            if refusal:
                raise refusal
            if cause and cause.modern:  # no requests to such a client: an input_required result
                if cause.task is not None or method not in CLIENT_FEATURES or not cause.declared(CLIENT_FEATURES[method]):
                    raise McpError(METHOD_NOT_FOUND, "mcpstudio's client offers no %s" % method)
                reply["result"] = await self.downstream.bridge.ask(cause, method, params)
            elif not cause and method in ("sampling/createMessage", "elicitation/create"):  # whom would a person answer?
                self.log.warning("server `%s` sent %s outside any call: refused", self.server_id, method)
                raise McpError(INVALID_REQUEST, "mcpstudio passes %s on only during a call of this server's" % method)
            else:
                client = cause and cause.session or self._outside_calls(method)
                if not client or client.closed or (method in CLIENT_FEATURES
                                                   and CLIENT_FEATURES[method] not in client.client_capabilities):
                    raise McpError(METHOD_NOT_FOUND, "mcpstudio's client offers no %s" % method)
                if method == "elicitation/create" and params.get("mode") == "url":
                    self.showing([params], client)
                reply["result"] = await client.request(method, params, self.timeout(), cause and cause.request_id)
        except McpError as exc:
            reply["error"] = exc.to_json()
        except asyncio.CancelledError:
            return  # the server cancelled it: no answer
        finally:
            self.asking.pop(request_id, None)
        if self.state() in ("starting", "running"):
            self.client.send(reply)

    def stream_paused(self, request_id):
        """The server closed the event stream of our request `request_id` before it answered, to be resumed
        (SEP-1699): the client's own stream of the call is closed too, for it to resume (over --http)."""
        cause = self.client.causes.get(request_id)
        pause = getattr(cause.session.transport, "pause", None) if cause and cause.session else None
        if pause and (cause.session.protocol_version or "") >= "2025-11-25":  # older: no event ids
            pause(cause.request_id)


def poll_interval(suggested_ms, waited, server_id):
    """Seconds before a server's task is polled again, `waited` seconds after it was made: the interval the server
    suggests (0.1 to 5 s; 1 s when none), but no less than a backoff from 0.1 s to 5 s within 20 s; past
    TASK_MAX_TTL_MS (the longest of mcpstudio's own tasks), an error naming the server: the task is given up."""
    if waited > TASK_MAX_TTL_MS / 1000.0:
        raise UpstreamError(SERVER_TIMEOUT, "server `%s`: its task ran past 24 hours, the longest a task may run: "
                            "mcpstudio gave it up" % server_id)
    suggested = min(max(suggested_ms / 1000.0, 0.1), 5.0) if type(suggested_ms) in NUMBER else 1.0
    return max(suggested, min(5.0, 0.1 + waited / 4))


class ServerTasks:
    """A server's own tasks, polled inside mcpstudio's call or task to their results: 2025-11-25 task-augmented
    calls and the 2026-07-28 tasks extension."""

    def __init__(self, client, back, forward, modern_for, known_items, *, spec, state):
        """Its server's McpClient and BackChannel; the Upstream's forward(), modern_for() and known_items(); `spec`
        and `state` are callables, as an Upstream's update() replaces its spec and its state changes as it runs."""
        self.client, self.back = client, back
        self.forward, self.modern_for, self.known_items = forward, modern_for, known_items
        self.spec, self.state = spec, state

    def runs(self, name, ctx=None):
        """Whether this running server runs its tool `name` as a task of its own (2025-11-25 tasks)."""
        requests = _object(_object(self.client.capabilities.get("tasks")).get("requests"))
        if self.modern_for(ctx, name) or "call" not in _object(requests.get("tools")):
            return False
        return any(t.get("name") == name and _object(t.get("execution")).get("taskSupport") in ("optional", "required")
                   for t in self.known_items("tools"))

    async def call(self, name, arguments, ctx):
        """A call (made in one of mcpstudio's own tasks) that the server runs as its task: created, polled
        to its end, its result fetched; cancelled, the server's task is cancelled too."""
        creating = asyncio.ensure_future(self.forward("tools/call", {"name": name, "arguments": arguments,
                                                                     "task": {}}, ctx))
        try:
            created = await asyncio.shield(creating)
        except asyncio.CancelledError:  # before the server named its task: cancel that task once it does

            def cancel_it(future):
                made = _object(None if future.cancelled() or future.exception() else future.result().get("task"))
                if isinstance(made.get("taskId"), str):
                    self.cancel({"taskId": made["taskId"]})
            creating.add_done_callback(cancel_it)
            raise
        if "task" not in created:  # it answered at once
            return created
        task_id = _object(created["task"]).get("taskId")
        if not isinstance(task_id, str):
            raise UpstreamError(INTERNAL_ERROR, "%s answered a task-augmented call without a task" % self.spec().key)
        self.back.calls.append(ctx)  # what the server asks while its task runs belongs to this call
        self.back.tasks[task_id] = ctx
        started = time.monotonic()
        try:
            while True:
                task = await self.client.request("tasks/get", {"taskId": task_id}, self.spec().tool_timeout, ctx)
                if task.get("status") in TERMINAL + ("input_required",):  # its questions come with tasks/result
                    break
                await asyncio.sleep(poll_interval(task.get("pollInterval"), time.monotonic() - started, self.spec().id))
            result = await self.client.request("tasks/result", {"taskId": task_id}, self.spec().tool_timeout, ctx)
        except (asyncio.CancelledError, UpstreamError):
            self.cancel({"taskId": task_id})
            raise
        finally:
            self.back.calls.remove(ctx)
            self.back.tasks.pop(task_id, None)
        meta = result.get("_meta")
        if RELATED_TASK in _object(meta):  # the server's task id stays behind mcpstudio
            result["_meta"] = {k: v for k, v in meta.items() if k != RELATED_TASK}
        return result

    async def follow(self, task_id, meta, ctx):
        """A 2026-07-28 server made a task of a call (the client declared the tasks extension): polled here,
        inside mcpstudio's own call or task, to its result; cancelled, the server's task is cancelled too."""
        ask = {"taskId": task_id, "_meta": dict(self.client.meta or {}, **{k: v for k, v in meta.items()
                                                                         if k != "progressToken"})}
        started = time.monotonic()
        try:
            while True:
                task = await self.client.request("tasks/get", ask, self.spec().tool_timeout, ctx)
                status = task.get("status")
                if status == "completed" and isinstance(task.get("result"), dict):
                    return task["result"]
                if status in ("failed", "cancelled", "input_required"):
                    error = _object(task.get("error"))
                    raise UpstreamError(error.get("code") if isinstance(error.get("code"), int) else INTERNAL_ERROR,
                                        "[%s] %s" % (self.spec().id, error.get("message") or task.get("statusMessage") or (
                                            "its task asked for input, which mcpstudio cannot pass on inside a task"
                                            if status == "input_required" else "its task %s" % status)))
                await asyncio.sleep(poll_interval(task.get("pollIntervalMs"), time.monotonic() - started,
                                                  self.spec().id))
        except (asyncio.CancelledError, UpstreamError):
            self.cancel(ask)
            raise

    def cancel(self, params):
        """Cancel the server's own task `params["taskId"]` (a call of ours made it), answer unawaited."""
        if self.state() == "running":
            self.client.send({"jsonrpc": "2.0", "id": "mcpstudio-cancel-%s" % params["taskId"],
                                  "method": "tasks/cancel", "params": params})


PROBE_TIMEOUT = 2.0               # seconds an initialized server may take to say whether it speaks 2026-07-28 too


class Upstream:
    """One upstream server: an MCP client over its stdio (or HTTP), started on demand and supervised."""

    # Its state until a start, a listing or a call changes it.
    transport = pid = started_at = None
    restarts = 0
    run = ""            # this start of it, unique: results cached from an earlier run are not served
    listing = None      # what the running server listed: tools, resources, templates, prompts
    cached = None       # the same from the on-disk cache (None: not read, {}: none)
    user_stopped = False
    list_deadline = None  # until when listings wait for its first start
    refused_bearer = None  # the last of them the server answered 401
    _starting = _stopping = None  # the tasks starting and stopping it
    _health = None      # the task pinging it (healthCheckInterval)
    _gate = None        # the Semaphore of maxConcurrency, made at its first call
    _relisting = None   # the listing a list_changed started
    _relist_again = False  # another list_changed came while it ran

    def __init__(self, spec: UpstreamSpec, runner: ProcessRunner, log: Log, downstream, cache_dir, *,
                 config_path=None, start_tool="servers_start", bearer=None, owner=None):
        self.spec = spec
        self.bearer = bearer  # a person's own access token it sends (`"auth": "passthrough"`), or None; see renew
        self.owner = owner    # an isolated process's ("person", key) or ("session", Session): what it says is theirs alone
        self.runner, self.log = runner, log
        self.downstream = downstream    # the client side: what it offers, its log level, where changes go
        self.config_path = config_path  # the config file, whose folder keeps the server's sign-in (OAuth)
        self.start_tool = start_tool    # the manager tool that starts it again, named in errors
        self.state = "stopped"   # stopped, starting, running, failed, crashed, stopped-by-user, ...
        self.server_log, self.backoff = ServerLog(spec.id, log), RestartBackoff()
        self.client = McpClient(spec.id, lambda message, cause: self.back.message(message, cause), self.server_log.note)
        self.back = BackChannel(self.client, downstream, log, spec.id, owner, state=lambda: self.state,
                                timeout=lambda: self.spec.tool_timeout, relist=self.relist)
        self.tasks = ServerTasks(self.client, self.back, self.forward, self.modern_for, self.known_items,
                                 spec=lambda: self.spec, state=lambda: self.state)
        self.listen_stream = ListenStream(self.client, self.server_log, state=lambda: self.state)
        self.cache = ListingCache(os.path.join(cache_dir, "server-%s.json" % spec.launch), log)
        self.last_error = spec.error
        if spec.disabled:
            self.state = "disabled"
        elif spec.error:
            self.state = "misconfigured"

    def version(self):
        """Its launch fingerprint and this run of it: what results cached from it are of."""
        return "%s-%s" % (self.spec.launch, self.run)

    def read_cache(self, entry):
        """Its on-disk listing, read ahead in a worker thread (None: there is none), unless known() read it first."""
        if self.cached is None:
            self.cached = entry or {}

    def list_wait(self, now):
        """Until when a listing waits for its first start: LIST_WAIT from `now`, the first time it is asked."""
        if self.list_deadline is None:
            self.list_deadline = now + _list_wait()
        return self.list_deadline

    def known(self):
        """The latest listing: the running server's, else the cache's, else None."""
        if self.listing is not None:
            return self.listing
        if self.cached is None:
            self.cached = self.cache.read() or {}
        if self.cached.get("offered", []) != sorted(self.downstream.offered()):
            return None  # listed for a client that offered other features (sampling, roots...): list again
        return self.cached or None

    def known_items(self, key):
        """The latest listing's `key` (tools, resources, prompts...), () when none is known."""
        return (self.known() or {}).get(key) or ()

    def usable(self):
        """Whether the entry can be started at all (not disabled or misconfigured)."""
        return self.state not in ("disabled", "misconfigured")

    # -- lifecycle ----------------------------------------------------------------

    def _unavailable(self) -> UpstreamError | None:
        if self.state == "disabled":
            return UpstreamError(SERVER_NOT_RUNNING, "server `%s` is disabled in the config (`disabled: true`)"
                                 % self.spec.id)
        if self.state == "misconfigured":
            return UpstreamError(SERVER_START_FAILED, "server `%s` cannot start: %s" % (self.spec.id, self.spec.error))
        if self.user_stopped:
            return UpstreamError(SERVER_NOT_RUNNING, "server `%s` was stopped with servers_stop; start it with "
                                 "%s" % (self.spec.id, self.start_tool))
        return None

    async def _startable(self):
        """Wait out a stop in progress (a restart or reload: start afresh once it is down); raise why the
        server cannot start, if it cannot."""
        if self._stopping and not self._stopping.done():
            await asyncio.wait([self._stopping])
        problem = self._unavailable()
        if problem:
            raise problem

    async def ready(self, ctx=None, wait_backoff=True):
        """Return once the server runs, starting it if needed; raise UpstreamError if it cannot."""
        if self.state == "running":
            return
        await self._startable()
        task = self.start(wait_backoff)
        if ctx and ctx.progress_token is not None and not task.done():
            started = time.monotonic()
            while not task.done():
                elapsed = time.monotonic() - started
                # Below 1 and rising: the server's own progress, which follows, can only be higher.
                ctx.progress(round(elapsed / (elapsed + 10.0), 3), message="starting server %s (%.0f s)"
                             % (self.spec.id, elapsed))
                await asyncio.wait([task], timeout=PROGRESS_INTERVAL)
        if not task.done():
            await asyncio.wait([task])
        if task.cancelled():  # stopped while starting (servers_stop, a restart, a reload)
            raise self._unavailable() or UpstreamError(
                SERVER_NOT_RUNNING, "server `%s` was stopped while it started" % self.spec.id, {"server": self.spec.id})
        task.result()

    def start(self, wait_backoff=True):
        """The task that starts the server (one at a time); it raises UpstreamError on failure."""
        if self.state == "running":
            done = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        if not self._starting or self._starting.done():
            self._starting = asyncio.ensure_future(self._start(wait_backoff))
            self._starting.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved
        return self._starting

    async def _start(self, wait_backoff):
        spec = self.spec
        await self._startable()
        delay = self.backoff.delay() if wait_backoff else 0.0
        if delay > BACKOFF_WAIT:
            raise UpstreamError(SERVER_START_FAILED, "server `%s` failed %.0f s ago (%s); the next try is in %.0f s"
                                % (spec.id, time.monotonic() - self.backoff.failed_at, self.last_error, delay))
        if self.state == "crashed":
            self.restarts += 1
        self.state = "starting"
        self.run = os.urandom(8).hex()
        if delay:
            self.server_log.note("failed %d times in a row: restarting after a backoff of %.1f s" % (self.backoff.failures, delay))
            await asyncio.sleep(delay)
        if spec.url is not None:
            await self._connect()
            return
        protocol = self.client.attach(_UpstreamProtocol(self.client, self.server_log, self.gone))
        self.server_log.restart()
        self.server_log.note("starting: %s" % spec.display())
        started = time.monotonic()
        spawn = asyncio.ensure_future(self.runner.start_server([spec.command] + spec.args, lambda: protocol,
                                                               env=dict(os.environ, **spec.env), cwd=spec.cwd))
        try:
            self.transport, _ = await asyncio.shield(spawn)  # a cancel mid-spawn must not lose the child
        except asyncio.CancelledError:
            self.client.detach(protocol)
            spawn.add_done_callback(self._end_orphan)
            raise
        except (OSError, ValueError) as exc:
            self.client.detach(protocol)
            hint = ""
            if isinstance(exc, FileNotFoundError):
                hint = (" (put the arguments in `args`: \"command\": %s, \"args\": [...])" % json.dumps(spec.command.split()[0])
                        if " " in spec.command.strip() else
                        " (is `%s` installed and on PATH? client configs often need an absolute path)" % spec.command)
            raise self._failed("cannot run %s: %s%s" % (spec.command, getattr(exc, "strerror", None) or exc, hint))
        self.pid = self.transport.get_pid()
        self.server_log.note("started pid %d" % self.pid)
        await self._shake_hands(started)

    async def _connect(self):
        """Start talking to a server reached by URL (Streamable HTTP, or the older HTTP+SSE)."""
        started = time.monotonic()
        self.server_log.note("connecting: %s (%s)" % (self.log.mask(self.spec.url), self.spec.transport))
        channel = self.client.attach(_HttpChannel(self))
        try:
            await asyncio.wait_for(channel.open(), self.spec.startup_timeout)
        except (asyncio.TimeoutError, OSError, ValueError) as exc:
            channel.close()
            self.client.detach(channel)
            raise self._failed("cannot connect to %s: %s" % (self.log.mask(self.spec.url), exc or "timed out"))
        await self._shake_hands(started)

    async def _handshake(self):
        await self.client.open(self.spec.protocol, self.downstream.offered())
        if not self.client.modern and not self.spec.protocol:
            await self.client.probe(min(self.spec.startup_timeout, PROBE_TIMEOUT))
        if self.downstream.log_level and "logging" in self.client.capabilities and not self.client.modern:
            await self.set_level(self.downstream.log_level)
        await self.refresh()

    async def _shake_hands(self, started):
        spec = self.spec
        try:
            await asyncio.wait_for(self._handshake(), spec.startup_timeout)
        except asyncio.TimeoutError:
            error = self._failed("it did not answer initialize and tools/list within %g s%s"
                                 % (spec.startup_timeout, self.server_log.tail()))
            await self._end()
            raise error
        except UpstreamError as exc:
            prefix = "server `%s` " % spec.id
            error = self._failed(exc.message[len(prefix):] if exc.message.startswith(prefix) else exc.message)
            await self._end()
            raise error
        except asyncio.CancelledError:
            await self._end()
            self.state = "stopped"
            raise
        self.state, self.started_at, self.last_error = "running", time.time(), None
        self.server_log.note("running: %s %s, protocol %s, %d tools, started in %.0f ms" % (
            self.client.server_info.get("name", "?"), self.client.server_info.get("version", ""),
            self.client.protocol_version,
            len(self.listing["tools"]), (time.monotonic() - started) * 1000))
        if spec.health_interval:
            self._health = asyncio.ensure_future(self._check_health())
        self.listen_stream.open()

    def _end_orphan(self, spawn):
        if not spawn.cancelled() and spawn.exception() is None:
            transport, protocol = spawn.result()
            asyncio.ensure_future(self.runner.end_server(transport, protocol.exited, 0))

    def _failed(self, reason) -> UpstreamError:
        self.state, self.last_error = "failed", reason
        self.backoff.failed()
        self.server_log.note("failed to start: %s" % reason)
        self.log.warning("server `%s` failed to start: %s", self.spec.id, reason)
        return UpstreamError(SERVER_START_FAILED, "server `%s` failed to start: %s" % (self.spec.id, reason),
                             {"server": self.spec.id})

    async def refresh(self):
        """List what the server offers, keep it, cache it, and tell the hub when it changed."""
        before = self.known()
        listing = self.listing = await self.client.listing(self.spec.startup_timeout)
        listing["tools"] = header_checked(listing["tools"], self.spec.id, self.log)
        listing["offered"] = sorted(self.client.offered)  # a server may list other tools to another client
        self.cache.write(listing, self.spec.key)
        if before is None or any(before.get(k) != listing[k] for k in ("tools", "resources", "resourceTemplates", "prompts")):
            self.downstream.changed()

    def relist(self):
        """A list_changed: list again (one listing in flight, one pending: a burst costs two)."""
        if not self._relisting or self._relisting.done():
            self._relisting = asyncio.ensure_future(self._refresh_quietly())
        else:
            self._relist_again = True

    async def _refresh_quietly(self):
        while True:
            self._relist_again = False
            try:
                await self.refresh()
            except UpstreamError as exc:
                self.server_log.note("could not list again after list_changed: %s" % exc.message)
            if not self._relist_again or self.state != "running":
                return

    async def _check_health(self):
        """Ping an idle running server now and then; one that does not answer is restarted."""
        try:
            while self.state == "running":
                await asyncio.sleep(self.spec.health_interval)
                if self.state != "running" or len(self.client.pending) > self.listen_stream.waiting():
                    continue
                timeout = min(HEALTH_TIMEOUT, self.spec.health_interval)
                try:
                    await self.client.request("server/discover" if self.client.modern else "ping", {}, timeout=timeout)
                except UpstreamError as exc:
                    if exc.code == SERVER_TIMEOUT:
                        self.log.warning("server `%s` did not answer a ping; restarting it", self.spec.id)
                        self.server_log.note("no answer to ping within %g s: restarting" % timeout)
                        self._health = None
                        await self.stop("it stopped answering pings", final_state="crashed")
                        self.backoff.failed()
                        self.start(wait_backoff=False)
                        return
        except asyncio.CancelledError:
            pass

    def gone(self, protocol):
        """The process exited: fail what waits on it at once; the next call restarts it."""
        code = protocol.transport and protocol.transport.get_returncode()
        self.lost(protocol, self.server_log.why("exited with code %s" % code if code is None or code >= 0
                                                else "was killed by %s" % _signal_name(-code)))

    def lost(self, protocol, reason):
        """The process exited or the connection failed: fail every waiting request at once."""
        if protocol.reason is not None:
            return
        protocol.reason = reason
        if protocol is not self.client.channel:
            return
        after = "; it %s on the next call" % ("restarts" if self.spec.url is None else "reconnects")
        self.client.fail_all(SERVER_NOT_RUNNING, "server `%s` %s%s" % (
            self.spec.id, reason, after if self.state == "running" else ""))
        if self.state == "running":
            self.state, self.last_error = "crashed", reason
            self.backoff.crashed(time.time() - (self.started_at or time.time()))
            self.server_log.note("crashed: %s" % reason)
            self.log.warning("server `%s` %s%s", self.spec.id, reason, after)
            asyncio.ensure_future(self._end())  # what it started goes with it

    async def _end(self):
        """Stop the process and its group (stdin closed, SIGTERM, grace, SIGKILL)."""
        if self._health:
            self._health.cancel()
            self._health = None
        self.listen_stream.close()
        transport, protocol = self.transport, self.client.channel
        if isinstance(protocol, _HttpChannel):
            protocol.close()
            self.client.detach(protocol)
            return
        if not transport or not protocol:
            return
        await self.runner.end_server(transport, protocol.exited, STDIN_CLOSE_WAIT)
        # A restart may have begun meanwhile (a crash's _end still waits out the old group's grace while the
        # next call starts the server again): clear only what this _end stopped, never the new start's.
        if self.transport is transport:
            self.transport = self.pid = None
        self.client.detach(protocol)

    def refuse_bearer(self):
        """The server answered 401 to the person's token it sent: a call with a newer token starts anew."""
        self.refused_bearer = self.bearer

    def renew(self, bearer):
        """The person's token of this call, if any: sent from now on (`"auth": "passthrough"`)."""
        self.bearer = bearer or self.bearer

    async def user_stop(self):
        """servers_stop: stop it until a person starts it again (calls arriving while it stops are refused)."""
        self.user_stopped = True
        await self.stop("servers_stop was called", "stopped-by-user")

    async def user_restart(self):
        """servers_restart: stop it, counted as a restart (user_start starts it again)."""
        await self.stop("servers_restart was called")
        self.restarts += 1

    def user_start(self):
        """servers_start or servers_restart: calls may start it again."""
        self.user_stopped = False
        if self.state == "stopped-by-user":
            self.state = "stopped"

    def stays_stopped_as(self, old):
        """It replaces `old` (its configuration changed): a servers_stop of `old` holds across the reload."""
        self.user_stopped = old.user_stopped
        if old.user_stopped and self.usable():
            self.state = "stopped-by-user"

    async def stop(self, reason, final_state="stopped"):
        """Stop the server and its group; runs to the end even if the caller is cancelled."""
        if not self._stopping or self._stopping.done():
            self._stopping = asyncio.ensure_future(self._stop(reason, final_state))
        stopping = self._stopping
        while not stopping.done():
            try:
                await asyncio.shield(stopping)
            except asyncio.CancelledError:
                if not stopping.done():
                    continue
                raise
        return stopping.result()

    async def _stop(self, reason, final_state):
        was = self.state
        if self.usable():
            self.state = "stopping"
        if self._starting and not self._starting.done():
            self._starting.cancel()
            await asyncio.wait([self._starting])
        if self.usable():
            self.state = final_state
        self.client.fail_all(SERVER_NOT_RUNNING, "server `%s` was stopped (%s)" % (self.spec.id, reason))
        if self.transport:
            self.server_log.note("stopping (%s)" % reason)
            await self._end()
            self.server_log.note("stopped")
        self.started_at = None
        return was

    def update(self, spec: UpstreamSpec):
        """A reload changed only settings that need no restart: calls from now on queue by the new limit."""
        if spec.max_concurrency != self.spec.max_concurrency:
            self._gate = None
        self.spec = spec

    async def set_level(self, level):
        """Pass the client's `logging/setLevel` on (a server that refuses it is noted, not failed)."""
        try:
            await self.client.request("logging/setLevel", {"level": level}, self.spec.tool_timeout)
        except UpstreamError as exc:
            self.server_log.note("logging/setLevel %s failed: %s" % (level, exc.message))

    # -- forwarding -----------------------------------------------------------------

    async def forward(self, method, params, ctx):
        """Send one routed request once the server runs; with the client's progress mapped back."""
        await self.ready(ctx)
        if self.spec.max_concurrency:
            if not self._gate:
                self._gate = asyncio.Semaphore(self.spec.max_concurrency)
            async with self._gate:
                return await self._forward(method, params, ctx)
        return await self._forward(method, params, ctx)

    def mirrors(self, ctx, name):
        """Whether a request (of `ctx`, for the tool or prompt `name`) goes to this server that speaks both
        eras as a 2026-07-28 one: a 2026-07-28 client's, and any for what it offers only in that era."""
        return self.client.dual and ((ctx and ctx.modern) or name in self.client.modern_only)

    def modern_for(self, ctx, name):
        """Whether this request reaches the server in the 2026-07-28 era."""
        return self.client.modern or self.mirrors(ctx, name)

    async def _forward(self, method, params, ctx):
        if self.state != "running":  # it stopped while the call waited in the queue
            await self.ready(ctx)
        token = None
        meta = dict(params.get("_meta") or {})
        if ctx and ctx.progress_token is not None:
            token = meta["progressToken"] = "mcpstudio-%d" % self.client.new_id()
            self.back.progress[token] = ctx
        if self.modern_for(ctx, params.get("name")):  # a 2026-07-28 request
            if self.mirrors(ctx, params.get("name")):  # to a server that speaks both eras: made one here
                meta.update(self.client.modern_meta(self.client.offered))
            if ctx and ctx.modern:  # the client's own capabilities
                meta[META_CAPABILITIES] = ctx.capabilities
            level = ctx.level if ctx and ctx.modern else self.downstream.log_level
            if level:  # no logging/setLevel in 2026-07-28: the level goes with each request
                meta[META_LOG_LEVEL] = level
        if meta:
            params = dict(params, _meta=meta)
        self.back.calls.append(ctx)
        try:
            result = await self.client.request(method, params, self.spec.tool_timeout, ctx)
            if result.get("resultType") == "task" and isinstance(result.get("taskId"), str):
                return await self.tasks.follow(result["taskId"], params.get("_meta") or {}, ctx)  # its own task
            return result
        except UpstreamError as exc:
            if exc.code == URL_ELICITATION_REQUIRED and ctx and not ctx.modern:  # its elicitation/complete: to ctx's
                self.back.showing(_object(exc.data).get("elicitations") or [], ctx.session)
            raise
        finally:
            self.back.calls.remove(ctx)
            if token:
                self.back.progress.pop(token, None)


# --------------------------------------------------------------------------
# Aggregator: other MCP servers behind this one (mcp-studio)
# --------------------------------------------------------------------------
# A config's `mcpServers` (Claude Desktop, Claude Code, Cursor) and `servers`
# (VS Code) entries are upstream MCP servers. Each becomes an Upstream: an
# MCP client over its stdin/stdout, started on first need, supervised, and
# stopped with its whole process group. The Aggregator is one source over
# all of them plus the config's own tools: it names every upstream tool
# `<serverId><sep><tool>`, routes by a table built at listing time, serves
# listings from an on-disk cache so a listing starts nothing, and adds the
# manager tools. Namespaces choose which servers one process serves. A reload
# (ConfigReload: config_reload, the file's watch, SIGHUP) reads the config
# again and restarts only what changed (plan_changes).

def _join_text(before, after):
    """Two texts joined by one space, unless either side already ends or begins with white space."""
    if not before or not after or before[-1:].isspace() or after[:1].isspace():
        return before + after
    return before + " " + after


def _checked(value, schema, where=""):
    """validate(), for a schema a server wrote: a `pattern` Python cannot read (JavaScript's \\p{L}, say)
    is left to the server to check."""
    try:
        return validate(value, schema, where)
    except re.error:
        def plain(node):
            if isinstance(node, dict):
                return {key: plain(item) for key, item in node.items() if key != "pattern" or not isinstance(item, str)}
            return [plain(item) for item in node] if isinstance(node, list) else node
        return validate(value, plain(schema), where)


class CuratedTool:
    """One upstream tool as its overrides show it (pure): `tool` is the definition to publish and
    `arguments(given)` the arguments a call sends the server. A mistake only the tool's schema can
    reveal (an argument it lacks, a fixed value its schema refuses, a hidden required argument with
    no value) raises a ConfigError naming the file and the key."""

    def __init__(self, tool, layers, public):
        self.original = tool["name"]
        merged, self.exact = {}, {}
        argument_layers = {}  # argument -> [(its override, place)]
        for override, place, exact in layers:
            for key, value in override.items():
                if key == "arguments":
                    for argument, change in value.items():
                        argument_layers.setdefault(argument, []).append((change, "%s.arguments.%s" % (place, argument)))
                        self.exact[argument] = self.exact.get(argument, False) or exact
                elif key in ("annotations", "_meta"):
                    merged[key] = dict(merged.get(key, {}), **value)
                elif key != "name":
                    merged[key] = value
        shown = dict(tool, name=public)
        for key in ("title", "description"):
            if key in merged:
                shown[key] = merged[key]
        if "descriptionPrefix" in merged or "descriptionSuffix" in merged:
            shown["description"] = _join_text(_join_text(merged.get("descriptionPrefix", ""),
                                                         str(shown.get("description") or "")),
                                              merged.get("descriptionSuffix", ""))
        for key in ("annotations", "_meta"):
            if key in merged:
                shown[key] = dict(_object(tool.get(key)), **merged[key])
        schema = dict(_object(tool.get("inputSchema")))
        properties = dict(_object(schema.get("properties")))
        required = [name for name in schema.get("required") or () if isinstance(name, str)]
        self.fixed, self.defaults, self.renamed = {}, {}, {}  # original -> value; public -> value; public -> original
        self.hidden = set()  # the arguments the model does not see (fixed ones among them)
        renamed = {}  # original -> public, of the arguments kept
        for argument, changes in argument_layers.items():
            change, place = {}, changes[-1][1]
            for one, _ in changes:
                change.update(one)
            if argument not in properties:
                if self.exact[argument]:  # a glob's argument applies to the tools that have it
                    raise ConfigError("%s: the tool `%s` has no argument `%s` (its arguments: %s)" % (
                        place, self.original, argument, ", ".join(sorted(properties)) or "none"))
                continue
            prop = _object(properties[argument])
            for key in ("value", "default"):
                problems = _checked(change[key], prop, "the %s %s" % (key, json.dumps(change[key]))) if key in change else ()
                if problems:
                    raise ConfigError("%s.%s: %s (the argument's schema: %s)" % (
                        place, key, "; ".join(problems), _clip(json.dumps(prop), 200)))
            if "value" in change or change.get("hidden"):
                if "value" in change or "default" in change:
                    self.fixed[argument] = change["value"] if "value" in change else change["default"]
                elif argument in required:
                    raise ConfigError("%s: `%s` is a required argument of `%s`: a hidden one needs a `value` (or a "
                                      "`default`) to send" % (place, argument, self.original))
                self.hidden.add(argument)
                del properties[argument]
                continue
            prop = dict(prop)
            if "description" in change:
                prop["description"] = change["description"]
            if "default" in change:
                prop["default"] = self.defaults[change.get("name", argument)] = change["default"]
            renamed[argument] = change.get("name", argument)
            properties[argument] = prop
        publics = {}
        for argument in properties:
            public = renamed.get(argument, argument)
            if public in publics:
                moved, other = (argument, publics[public]) if public != argument else (publics[public], argument)
                raise ConfigError("%s.name: `%s` is already the name of the argument `%s` of `%s`" % (
                    argument_layers[moved][-1][1], public, other, self.original))
            publics[public] = argument
        self.renamed = {public: argument for public, argument in publics.items() if public != argument}
        shown_required = [renamed.get(name, name) for name in required if name in properties and
                          renamed.get(name, name) not in self.defaults]
        schema["properties"] = {renamed.get(argument, argument): prop for argument, prop in properties.items()}
        if shown_required:
            schema["required"] = shown_required
        else:
            schema.pop("required", None)
        shown["inputSchema"] = schema
        self.tool = shown

    def arguments(self, given):
        """What a call with `given` (the model's arguments, checked against the published schema) sends the
        server: names mapped back, defaults filled in, fixed values added; ToolError for arguments that do
        not fit."""
        schema = self.tool["inputSchema"]
        problems = _checked(given, schema)
        for name in given:
            if name not in schema.get("properties", {}) and (name in self.hidden or name in self.renamed.values()):
                unknown = "`%s` is not a known argument" % name  # what `"additionalProperties": false` says (validate)
                problems = [problem for problem in problems if problem != unknown]
                problems.append("`%s` is not an argument of this tool%s" % (name, " (its value is fixed)" if name in
                                                                           self.fixed else ""))
        if problems:
            raise ToolError(_argument_help(self.tool["name"], problems, schema))
        sent = {self.renamed.get(name, name): value for name, value in dict(self.defaults, **given).items()}
        return dict(sent, **self.fixed)


def select_namespace(namespaces, requested, default, default_key="defaultNamespace"):
    """(name or None for every server, how it was chosen, error text or None): seed 004's rules."""
    names = ", ".join(sorted(namespaces)) or "none"
    if requested is not None:
        if requested in namespaces:
            return requested, "--namespace %s" % requested, None
        return None, None, "unknown namespace %s given by --namespace (configured namespaces: %s)" % (
            json.dumps(requested), names)
    if default is not None:
        if default in namespaces:
            return default, "%s in the config" % default_key, None
        return None, None, "unknown namespace %s in %s (configured namespaces: %s)" % (
            json.dumps(default), default_key, names)
    if len(namespaces) == 1:
        return next(iter(namespaces)), "the only namespace in the config", None
    if not namespaces:
        return None, "no namespaces in the config: every server", None
    return None, None, ("no namespace chosen and the config has several (%s); choose one with --namespace NAME in "
                        "this server's args, or set \"defaultNamespace\" in the config" % names)


def shared_uris(listings):
    """{uri: [server ids]} for each resource URI that more than one server lists (`listings`: [(server id,
    resources)]); skill:// URIs are served under each server's id, so they are never shared."""
    owners = {}
    for server_id, items in listings:
        for uri in {item.get("uri") for item in items if isinstance(item.get("uri"), str)}:
            owners.setdefault(uri, []).append(server_id)
    return {uri: ids for uri, ids in owners.items() if len(ids) > 1 and not uri.startswith("skill://")}


# (name, description, its parameters besides the server_id of a tool of one server (None: of none), read-only)
MANAGER_TOOLS = (
    ("servers_list", "List the configured MCP servers: id, status, pid, uptime, tool count and last error.",
     None, True),
    ("servers_start", "Start a server (also one stopped with servers_stop).", {}, False),
    ("servers_stop", "Stop a server; it stays stopped (its calls fail) until servers_start.", {}, False),
    ("servers_restart", "Stop and start a server.", {}, False),
    ("server_logs", "Recent lines of a server's stderr and of its starts, stops and crashes.",
     {"lines": {"type": "integer", "description": "how many of the last lines (default 50)", "default": 50}}, True),
    ("config_reload", "Read the config file again: added, removed and changed servers are started or "
                      "stopped, the others keep running.", None, False),
    ("namespaces_list", "List the namespaces of the config and which one this process serves, and why.",
     None, True),
)


class Namespace:
    """Which of a config's servers are served, and under which names: the namespace chosen (on the command line,
    by the config's default, or none), its filters and permissions, and the manager tools' names."""

    chosen_by = None
    refusal = None  # what every request gets when no namespace can be chosen

    def __init__(self, requested, separator, config_path, log: Log, plan=None, name=None):
        """`plan` and `name`: a namespace chosen already, without apply() (check's review of its overrides)."""
        self.requested = requested  # --namespace
        self.plan, self.name = plan, name
        self.separator = separator
        self.config_path, self.log = config_path, log
        self.said = set()  # (tool, reason) of each refused override said so far

    def manager_name(self, tool):
        """The public name of a manager tool (`mcpstudio__servers_list`, ...)."""
        return MANAGER_PREFIX + self.separator + tool

    def rename(self, spec: UpstreamSpec, original, table):
        """A name for `spec`'s tool `original`, whose public name another tool of `table` took: under the server's
        id when its prefix is "" (prefixed names are claimed first), else made distinct; a warning names both."""
        wanted = spec.public_name(original, self.separator)
        name = safe_name(wanted if spec.prefix else spec.id + self.separator + original, 10 ** 6, table)
        owner = table[wanted]
        self.log.warn_once("server `%s` lists a tool named %s, as `%s` does; the one of `%s` is listed as %s", spec.id,
                           wanted, owner[1] if owner[0] == "upstream" else "mcpstudio", spec.id, name)
        return name

    def apply(self, plan: UpstreamPlan):
        """Choose the namespace of `plan` (logged); its servers' specs by id, or none when it cannot be chosen."""
        self.plan = plan
        self.name, self.chosen_by, error = select_namespace(plan.namespaces, self.requested, plan.default,
                                                            plan.default_key)
        if error:
            self.refusal = McpError(INVALID_PARAMS, "mcpstudio cannot serve this config: %s" % error,
                                    {"namespaces": sorted(plan.namespaces), "config": self.config_path})
            self.log.error("%s: %s", self.config_path, error)
            return {}
        self.refusal = None
        members = plan.namespaces[self.name]["servers"] if self.name else None
        chosen = [spec for spec in plan.specs if members is None or spec.id in members]
        if self.config_path is None and len(chosen) == 1 and chosen[0].url:  # --url
            self.log.debug("serving %s", self.log.mask(chosen[0].url))
        else:
            self.log.info("%s: namespace %s (%s); servers: %s", os.path.basename(self.config_path or "config"),
                          self.name or "(all)", self.chosen_by, ", ".join(spec.id for spec in chosen) or "none")
        for spec in chosen:
            self.log.add_secrets(spec.secrets)
            if spec.error:
                self.log.warning("%s: server `%s` is not usable: %s", self.config_path, spec.id, spec.error)
            for note in spec.notes:
                self.log.warning("%s: %s", self.config_path, note)
        return {spec.id: spec for spec in chosen}

    def overrides(self):
        """The tool overrides of the chosen namespace itself (its `overrides`), or None."""
        return (self.plan.namespaces.get(self.name) or {}).get("overrides")

    def curate(self, spec: UpstreamSpec, tool):
        """(CuratedTool or None, public name, "file: key" of the override that named it or None) of `spec`'s
        listed `tool` in this namespace; ConfigError for an override the tool's schema refuses."""
        if not spec.overrides and not self.overrides():
            return None, spec.public_name(tool["name"], self.separator), None
        layers, public = self.plan.curation(self.name, spec, tool["name"], self.separator)
        if not layers:
            return None, public, None
        named = next((place for override, place, _ in reversed(layers) if "name" in override), None)
        return CuratedTool(tool, layers, public), public, named and named + ".name"

    def curate_name(self, spec: UpstreamSpec, original):
        """The public name `spec`'s tool `original` has in this namespace, overrides applied."""
        if not spec.overrides and not self.overrides():
            return spec.public_name(original, self.separator)
        return self.plan.curation(self.name, spec, original, self.separator)[1]

    def unmatched(self, overrides, names, what, checked):
        """Warn (once) of each of `overrides` [(pattern, override, place)] that names none of `names`: `what`
        lists no such tool, and the nearest names; `checked` says against which listing."""
        import difflib
        for pattern, _, place in overrides:
            if not any(_match(name, [pattern]) for name in names):
                close = difflib.get_close_matches(pattern, sorted(names), 3, 0.5)
                self.log.warn_once("%s: %s lists no tool %s (checked %s); nearest: %s", place, what, json.dumps(pattern),
                                   checked, ", ".join(close) or "none")

    def refused(self, name, reason):
        """Said once a run: `name` is not listed, an override of it being refused for `reason` (file and key)."""
        if (name, reason) not in self.said:
            self.said.add((name, reason))
            self.log.error("tool %s is not listed: %s", name, reason)

    def left_out(self, spec: UpstreamSpec, original):
        """Why the listing leaves out a server's tool `original` (see UpstreamPlan.left_out)."""
        return self.plan.left_out(self.name, spec, original, self.separator)

    def check_permitted(self, spec: UpstreamSpec, name, original):
        """The current plan's filters and permissions, again: a reload may deny what the last listing had."""
        why = self.left_out(spec, original)
        if why == "":
            raise McpError(INVALID_PARAMS, "Unknown tool: %s (the configuration was reloaded; list the tools "
                           "again)" % name)
        if why:
            raise McpError(TOOL_DENIED, "Tool denied: %s: %s" % (name, why), {"tool": name})


class ManagerTools:
    """The aggregator's own tools (`mcpstudio__servers_list`, ...): its servers, their logs, reloads, namespaces."""

    def __init__(self, namespace: Namespace, upstreams, reload, metrics: CallMetrics | None = None, admits=None):
        """`upstreams()`: id -> Upstream of the active namespace (a reload replaces them); `reload()`: config_reload's
        coroutine; `metrics`: the guard's counters servers_list shows; `admits`: the people rule of namespaces_list."""
        self.namespace, self.upstreams, self.reload = namespace, upstreams, reload
        self.metrics, self.admits = metrics, admits

    def listed(self):
        """(tool, its listing) of each manager tool, named with the namespace's separator."""
        listed = []
        for tool, description, properties, read_only in MANAGER_TOOLS:
            schema = {"type": "object", "properties": {}}
            if properties is not None:
                schema = {"type": "object", "properties": dict({"server_id": {"type": "string"}}, **properties),
                          "required": ["server_id"]}
            listed.append((tool, {"name": self.namespace.manager_name(tool), "description": "[mcpstudio] " + description,
                                  "inputSchema": schema, "annotations": {"readOnlyHint": read_only}}))
        return listed

    @staticmethod
    def shown(up, text):
        """`text` about `up` as a client may read it: secrets masked, and none of the server's env values."""
        return mask_secrets(text, Log(secrets=up.spec.env.values()).secrets + up.log.secrets)

    def status(self, up):
        """What servers_list says of one server (its curated tools too: public name -> the server's name)."""
        known = up.known()
        namespace, curated = self.namespace, {}
        for tool in (known or {}).get("tools", ()) if up.spec.overrides or namespace.overrides() else ():
            layers, public = namespace.plan.curation(namespace.name, up.spec, tool["name"], namespace.separator)
            if layers and namespace.left_out(up.spec, tool["name"]) is None:
                curated[public] = tool["name"]
        return dict({
            "id": up.spec.id, "name": up.spec.key, "status": up.state, "pid": up.pid,
            "uptimeSeconds": round(time.time() - up.started_at, 1) if up.started_at and up.state == "running" else None,
            "tools": sum(namespace.left_out(up.spec, t["name"]) is None for t in known["tools"]) if known else None,
            "toolsFrom": ("server" if up.listing is not None else "cache") if known else None,
            "lastError": self.shown(up, up.last_error) if up.last_error else None, "restarts": up.restarts,
            "command": self.shown(up, up.spec.display()), "env": dict.fromkeys(up.spec.env, "***"),
            "headers": dict.fromkeys(up.spec.headers, "***"),
            "transport": "stdio" if up.spec.url is None else up.spec.transport,
            "protocol": up.client.protocol_version if up.state == "running" else None,
        }, **({"curatedTools": curated} if curated else {}))

    def _server(self, arguments) -> Upstream:
        server_id, upstreams = arguments.get("server_id"), self.upstreams()
        upstream = next((u for u in upstreams.values() if server_id in (u.spec.id, u.spec.key)), None)  # key too
        if not upstream:
            raise UpstreamError(SERVER_NOT_FOUND, "no server %s%s; servers: %s" % (
                json.dumps(server_id), " in namespace %s" % self.namespace.name if self.namespace.name else "",
                ", ".join(upstreams) or "none"))
        return upstream

    async def call(self, tool, arguments, ctx=None):
        """Run one manager tool; its result is JSON text plus structuredContent. A signed-in person (`ctx`) is
        shown only the namespaces they may use."""
        person = getattr(getattr(ctx, "session", None), "signed_in", None)
        try:
            if tool == "servers_list":
                result = {"servers": [self.status(u) for u in self.upstreams().values()],
                          "tools": self.metrics.summary() if self.metrics else {}}
            elif tool == "namespaces_list":
                namespace = self.namespace
                result = {"active": namespace.name, "chosenBy": namespace.chosen_by, "namespaces": [
                    {"name": name, "servers": ns["servers"], "active": name == namespace.name,
                     "description": ns["description"]} for name, ns in namespace.plan.namespaces.items()
                    if person is None or self.admits is None or self.admits(ns.get("people"), person)]}
            elif tool == "config_reload":
                result = await self.reload()
            elif tool == "server_logs":
                upstream = self._server(arguments)
                count = arguments.get("lines", 50)
                if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                    raise ToolError("`lines` must be a positive whole number")
                result = {"server": upstream.spec.id,
                          "lines": [self.shown(upstream, line) for line in list(upstream.server_log.lines)[-count:]]}
            else:
                upstream = self._server(arguments)
                if tool == "servers_stop":
                    await upstream.user_stop()
                elif tool == "servers_restart":
                    await upstream.user_restart()
                if tool in ("servers_start", "servers_restart"):
                    upstream.user_start()
                    await upstream.ready(wait_backoff=False)  # a person asked: no backoff; says why it fails
                result = self.status(upstream)
        except (UpstreamError, ConfigError) as exc:
            raise ToolError(exc.message if isinstance(exc, McpError) else str(exc)) from None
        return {"content": [text_block(json.dumps(result, indent=1, ensure_ascii=False))], "structuredContent": result}


def skill_uri(server_id, uri):
    """A server's skill:// URI as the aggregator serves it, under skill://<server id>/; any other value as it is."""
    return "skill://%s/%s" % (server_id, uri[8:]) if isinstance(uri, str) and uri[:8] == "skill://" else uri


def skill_text(server_id, text):
    """A server's text (a prompt, an error message) with every skill:// URI in it as the aggregator serves it."""
    return text.replace("skill://", "skill://%s/" % server_id) if isinstance(text, str) else text


class UpstreamSkills:
    """Skills of the servers that declare the skills extension, asked of a server when a client asks (never ahead),
    under skill://<server id>/...; the config's own skills beside them."""

    def __init__(self, namespace: Namespace, log: Log, upstreams, active, discover, local):
        """`upstreams()`: id -> Upstream of the active namespace, `active()`: those usable (a reload replaces them);
        `discover()`: the coroutine that starts the servers never listed; `local()`: the config's own sources."""
        self.namespace, self.log = namespace, log
        self.upstreams, self.active, self.discover, self.local = upstreams, active, discover, local
        self._paths = {}  # server id -> the skill paths its last skills/list served here

    def servers(self):
        """The servers whose last listing declared the skills extension."""
        return [u for u in self.active() if isinstance((u.known() or {}).get("skills"), dict)]

    def _entry(self, upstream, entry):
        """A server's skill entry under skill://<id>/..., or None when left out (filters) or malformed."""
        if str(_object(entry).get("uri"))[:8] != "skill://" or not isinstance(entry.get("frontmatter"), dict):
            return None
        if self.namespace.left_out(upstream.spec, str(entry["frontmatter"].get("name"))) is not None:
            return None
        entry = dict(entry, uri=skill_uri(upstream.spec.id, entry["uri"]))
        if isinstance(entry.get("resources"), list):
            entry["resources"] = [dict(r, uri=skill_uri(upstream.spec.id, r.get("uri"))) if isinstance(r, dict) else r
                                  for r in entry["resources"]]
        return entry

    @staticmethod
    async def forward(upstream, method, params, ctx):
        """`method` of a server's skill URI (params["uri"], its own): its errors name the URIs the client knows."""
        try:
            return await upstream.forward(method, params, ctx)
        except McpError as exc:
            data = exc.data
            if isinstance(data, dict) and "uri" in data:
                data = dict(data, uri=skill_uri(upstream.spec.id, data["uri"]))
            raise type(exc)(exc.code, skill_text(upstream.spec.id, exc.message), data) from None

    async def _pages(self, upstream, method, params, key):
        items, cursor = [], None
        for _ in range(1000):
            result = await self.forward(upstream, method, dict(params, cursor=cursor) if cursor else params, None)
            items.extend(result.get(key) or ())
            cursor = result.get("nextCursor")
            if not cursor:
                break
        return items

    async def list(self):
        """The config's own skills, then each server's (asked now, never ahead), under skill://<id>/."""
        await self.discover()
        entries = []
        for source in self.local():
            if source.skills:
                entries.extend(await source.list_skills())
        for upstream in self.servers():
            try:
                found = await self._pages(upstream, "skills/list", {}, "skills")
            except McpError as exc:
                self.log.warning("%s: skills/list failed: %s", upstream.spec.id, exc.message)
                continue
            served = [e for e in (self._entry(upstream, e) for e in found) if e]
            self._paths[upstream.spec.id] = {e["uri"][8:-len("/SKILL.md")] for e in served}
            entries.extend(served)
        return entries

    async def route(self, uri):
        """(server, its own URI) for skill://<id>/..., None for a URI of no server; -32602 outside its skills."""
        segments = skill_uri_segments(uri) if uri.startswith("skill://") else ()
        upstream = self.upstreams().get(segments[0]) if len(segments) > 1 else None
        if upstream and upstream not in self.servers():
            await self.discover()  # a server not listed yet
        if not upstream or upstream not in self.servers():
            return None
        if upstream.spec.id not in self._paths:
            await self.list()
        paths = self._paths.get(upstream.spec.id, ())
        if not any("/".join(segments[:cut]) in paths for cut in range(2, len(segments) + 1)):
            raise _no_skill(uri)
        return upstream, "skill://" + uri[8:].partition("/")[2]

    async def get(self, uri):
        """`skills/get`: the server's entry under its prefix, else the config's own skills'."""
        route = await self.route(uri)
        if not route:
            return await self._local("get_skill", uri)
        entry = self._entry(route[0], (await self.forward(route[0], "skills/get", {"uri": route[1]}, None)).get("skill"))
        if entry is None or entry["uri"] != uri:
            raise _no_skill(uri)
        return entry

    async def read_directory(self, uri):
        """`resources/directory/read` of a server's skill folder (all pages), else of the config's own."""
        route = await self.route(uri)
        if not route:
            return await self._local("read_directory", uri)
        upstream, inner = route
        if not upstream.known()["skills"].get("directoryRead"):
            raise _invalid_params("the server `%s` does not read directories" % upstream.spec.id)
        return [dict(c, uri=skill_uri(upstream.spec.id, c["uri"]))
                for c in await self._pages(upstream, "resources/directory/read", {"uri": inner}, "resources")
                if isinstance(c, dict) and str(c.get("uri"))[:8] == "skill://"]

    async def _local(self, method, uri):
        for source in self.local():
            if source.skills:
                result = await getattr(source, method)(uri)
                if result is not None:
                    return result
        return None


def _described(server_key, item, name):
    """A server's tool or prompt under its public name, described as `[server] ...`."""
    item = dict(item, name=name, description=("[%s] %s" % (server_key, item.get("description") or "")).rstrip())
    if "inputSchema" in item:  # a tool: any call may run as a task of mcpstudio's (see ServerTasks.call)
        execution = _object(item.get("execution"))
        item["execution"] = dict(execution, taskSupport="required" if execution.get("taskSupport") == "required"
                                 else "optional")
    return item


class PersonSecrets:
    """Each signed-in person's own secrets for `${person.NAME}` in an isolated server's env, headers or args: one
    JSON file {subject: {NAME: value}} in the mcpstudio config folder, mode 0600 (written by `mcpstudio secrets
    set`), read again whenever an instance starts. Never listed with values, never shown to the model."""

    def __init__(self, path=None):
        self.path = path or os.path.join(os.path.dirname(default_config_path()), "people-secrets.json")

    def load(self, strict=False):
        """{subject: {NAME: value}}; {} when there is no store, or (unless `strict`: ConfigError) one that cannot
        be read."""
        try:
            data = read_private_json(self.path)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            if strict:
                raise ConfigError("cannot read the people's secrets in %s (%s): fix or remove it; it is kept as it "
                                  "is" % (self.path, getattr(exc, "strerror", None) or exc))
            return {}
        if not isinstance(data, dict) and strict:
            raise ConfigError("%s is not a JSON object of people's secrets: fix or remove it" % self.path)
        return data if isinstance(data, dict) else {}

    def of(self, person):
        """The secrets of `person` (their subject): {NAME: value}."""
        mine = self.load().get(person)
        return {key: value for key, value in mine.items() if isinstance(value, str)} if isinstance(mine, dict) else {}

    def set(self, person, name, value):
        """Keep (or with None, remove) `person`'s secret `name`; whether it was there before. A store that cannot be
        read is never written over (everybody's secrets would be lost)."""
        data = self.load(strict=True)
        mine = data.setdefault(person, {})
        there = name in mine
        if value is None:
            mine.pop(name, None)
        else:
            mine[name] = value
        if not mine:
            del data[person]
        write_private_json(self.path, data)
        return there


class IsolatedInstances:
    """The processes of isolated servers (`isolation`: "user" or "session"): each caller's own instance of a server,
    started with their own secrets (and token), at most `maxInstances` of a server at once; stopped when idle for its
    idleTimeout, when its session ends, or when a reload changes or removes its server."""

    _sweeping = None  # the task that stops idle instances (_sweep_idle)

    def __init__(self, runner: ProcessRunner, log: Log, downstream: Downstream, cache_dir, config_path, start_tool):
        """What an instance is built with, as the Aggregator builds its shared servers' (see Upstream)."""
        self.runner, self.log, self.downstream = runner, log, downstream
        self.cache_dir, self.config_path, self.start_tool = cache_dir, config_path, start_tool
        self.isolated = collections.OrderedDict()  # (server id, "person"|"session", who) -> [Upstream, used, calls, session]

    async def instance(self, upstream: Upstream, ctx) -> Upstream:
        """Where a call of `ctx` to `upstream` goes: the shared process, or for an isolated server the caller's
        own (`user`: the signed-in person's, started with their secrets; `session`: the client session's, the
        person's in 2026-07-28), at most `maxInstances` at once, the least recently used idle one stopped to
        make room; ones idle for the server's idleTimeout, or of a session that ended, are stopped."""
        spec, person = upstream.spec, getattr(getattr(ctx, "session", None), "person", None)
        if spec.isolation == "shared" or ctx is None or (person is None and (spec.isolation == "user" or ctx.modern)):
            return upstream
        owner = ("person", person) if spec.isolation == "user" or ctx.modern else ("session", id(ctx.session))
        bearer = await self._person_token(spec, ctx.session) if spec.person_token else None
        self.sweep()
        key = (spec.id,) + owner
        if key in self.isolated and bearer and self.isolated[key][0].refused_bearer not in (None, bearer):
            self._stop(key, "the server refused the person's last token")  # a new token: a new start
        if key in self.isolated:
            self.isolated.move_to_end(key)
            self.isolated[key][0].renew(bearer)
            return self.isolated[key][0]
        configured = getattr(spec, "origin", spec)  # with its ${person.NAME} (the shared one runs without them)
        secrets = PersonSecrets().of(person) if person is not None else {}
        missing = [name for name in configured.person_names() if not secrets.get(name)]
        if missing:
            raise ToolError("server `%s` needs your own secret %s, which is not set; set it with `mcpstudio secrets "
                            "set %s --person %s` (the value on stdin), then call again"
                            % (spec.id, missing[0], missing[0], person or "NAME"))
        mine = [k for k in self.isolated if k[0] == spec.id]
        if len(mine) >= spec.max_instances:
            idle = next((k for k in mine if not self.isolated[k][2]), None)
            if idle is None:
                raise ToolError("server `%s` runs %d instances already (its maxInstances), each busy with a call: "
                                "try again in a while" % (spec.id, spec.max_instances))
            self._stop(idle, "another caller needed room (maxInstances %d)" % spec.max_instances)
        own = Upstream(configured.for_person(secrets), self.runner, self.log, self.downstream,
                       self.cache_dir, config_path=self.config_path,
                       start_tool=self.start_tool, bearer=bearer,
                       owner=(owner[0], ctx.session) if owner[0] == "session" else owner)
        self.log.add_secrets([value for value in secrets.values() if value])
        self.isolated[key] = [own, time.monotonic(), 0, ctx.session if owner[0] == "session" else None]
        if self._sweeping is None or self._sweeping.done():
            self._sweeping = asyncio.ensure_future(self._sweep_idle())
        self.log.info("server %s: a process of its own for %s %s", spec.id, owner[0],
                      person if owner[0] == "person" else ctx.session.label)
        return own

    @staticmethod
    async def _person_token(spec, session):
        """The token a person's calls to a URL server of `auth` carry: for "passthrough" their own, only if its
        audience names the server (a token the identity provider issued for that server too); for "exchange" the one
        the identity provider gives for the server in exchange for theirs (RFC 8693). ToolError, saying what to do,
        else (the person's token refused in an exchange: the gateway refuses it too, so they sign in again)."""
        person = getattr(session, "signed_in", None)
        if spec.person_token == "exchange":
            if person is None or person.token is None or person.sign_in is None:
                raise ToolError("server `%s` is called with a token exchanged for your own (\"auth\": \"exchange\"), "
                                "but you signed in with %s" % (spec.id, "a listed person's token, which the identity "
                                                               "provider does not know" if person else "no token"))
            try:
                return await person.sign_in.exchange(person, spec.url)
            except TokenError as exc:
                person.refuse(str(exc))
                raise ToolError("server `%s`: %s" % (spec.id, exc)) from None
            except OAuthError as exc:
                raise ToolError("server `%s`: %s; the admin must allow the gateway's client to exchange tokens for "
                                "it there (RFC 8693)" % (spec.id, exc)) from None
        token = person.token_for(spec.url) if person is not None else None
        if token is None:
            raise ToolError(
                "server `%s` is called with your own sign-in (\"auth\": \"passthrough\"), but your access token was "
                "not issued for it: its audience (aud) %s does not name %s. A token is never passed on to a service "
                "it was not issued for; the admin must have the identity provider issue the gateway's tokens for "
                "that resource too (RFC 8707: resource=%s beside the gateway's own), then sign in again"
                % (spec.id, json.dumps(person.audiences) if person is not None and person.audiences
                   else "(a static token has none)" if person is not None else "(none)", spec.url, spec.url))
        return token

    def sweep(self, ended=None):
        """Stop the isolated instances of sessions that ended (`ended` just did), and those idle for their server's
        idleTimeout."""
        now = time.monotonic()
        for key, entry in list(self.isolated.items()):
            if entry[3] is not None and (entry[3].closed or entry[3] is ended):
                self._stop(key, "its session ended")
            elif not entry[2] and now - entry[1] > entry[0].spec.idle_timeout:
                self._stop(key, "it was not used for %g s (its idleTimeout)" % entry[0].spec.idle_timeout)

    async def _sweep_idle(self):
        """While isolated instances run, sweep them when the first of them could have gone idle: an instance
        nobody calls again is stopped on time, not at the next call."""
        while self.isolated:
            now = time.monotonic()
            due = min((entry[1] + entry[0].spec.idle_timeout for entry in self.isolated.values() if not entry[2]),
                      default=now + min(entry[0].spec.idle_timeout for entry in self.isolated.values()))  # all busy
            await asyncio.sleep(min(max(due - now, 0) + 0.5, ISOLATED_IDLE))
            self.sweep()

    def _stop(self, key, why):
        entry = self.isolated.pop(key)
        asyncio.ensure_future(entry[0].stop(why))

    def calling(self, upstream):
        """A call to `upstream` begins: an instance of this one's is busy (not stopped to make room) while it runs.
        Its entry, for called(); None for a shared process."""
        entry = next((e for e in self.isolated.values() if e[0] is upstream), None)
        if entry:
            entry[2] += 1
        return entry

    @staticmethod
    def called(entry):
        """The call calling() gave `entry` for ended: the instance was used now, and is one call less busy."""
        entry[1], entry[2] = time.monotonic(), entry[2] - 1

    def upstreams(self):
        """The instances running, or starting."""
        return [entry[0] for entry in self.isolated.values()]

    def stop_servers(self, server_ids, why):
        """Stop every instance of the servers `server_ids` (a reload removed or changed them)."""
        for key in [k for k in self.isolated if k[0] in server_ids]:
            self._stop(key, why)

    def close(self):
        """Sweep no more (Aggregator.close stops the instances with the shared servers)."""
        if self._sweeping is not None:
            self._sweeping.cancel()


class ConfigWatch:
    """Reads the config file again when its stamp (mtime, size, inode) changes, every `interval` seconds."""

    _task = None

    def __init__(self, path, interval, log: Log, reload):
        self.path, self.interval, self.log = path, interval, log
        self.reload = reload  # a coroutine function that reads the file again
        self.stamp = self.read_stamp()

    def mark(self):
        """The file as it is now is the one read (a reload): only a later change reads it again."""
        self.stamp = self.read_stamp()

    def read_stamp(self):
        try:
            st = os.stat(self.path)
            return (st.st_mtime_ns, st.st_size, st.st_ino)
        except (OSError, TypeError):
            return None

    def start(self):
        if self.interval and self.path:
            self._task = asyncio.ensure_future(self._watch())

    async def _watch(self):
        while True:
            await asyncio.sleep(self.interval)
            stamp = self.read_stamp()
            if stamp and stamp != self.stamp:
                self.stamp = stamp
                self.log.info("%s changed: reading it again", self.path)
                try:
                    await self.reread()
                except Exception as exc:  # whatever went wrong, the next change is still read
                    self.log.error("%s: reading it again failed (%s: %s); the previous configuration stays in use",
                                   self.path, type(exc).__name__, exc)

    async def reread(self):
        """Read the file again; a bad one is logged and changes nothing."""
        try:
            await self.reload()
        except ConfigError as exc:
            self.log.error("%s; the previous configuration stays in use", exc)

    def close(self):
        if self._task:
            self._task.cancel()


def plan_changes(old, new):
    """What a reload does to each server (`old`, `new`: id -> UpstreamSpec): one whose command, URL, error or
    `disabled` changed is restarted; one whose other settings changed is updated in place."""
    report = {"added": [], "removed": [sid for sid in old if sid not in new], "restarted": [], "updated": [],
              "unchanged": []}
    for sid, spec in new.items():
        before = old.get(sid)
        if before is None:
            report["added"].append(sid)
        elif (before.launch, before.error, before.disabled) != (spec.launch, spec.error, spec.disabled):
            report["restarted"].append(sid)
        else:
            report["updated" if before.settings != spec.settings else "unchanged"].append(sid)
    return report


class ConfigReload:
    """The config as last read, and its reading again (Aggregator.reload: config_reload, the file's watch, SIGHUP,
    the tui): the config's own sources start again only when their part changed, and each server as plan_changes
    says; a bad file changes nothing. It holds what a reload replaces, the config's own sources and the servers of
    the active namespace, which the Aggregator serves."""

    _reloading = events = None  # the reload under way (one at a time); what the config's own sources report to

    def __init__(self, read, local, local_key, namespace: Namespace, log: Log, config_path, mark, new_upstream,
                 instances: IsolatedInstances, changed):
        """`read()`: (local sources, UpstreamPlan, local key) of the file as it is now (`read` None: there is no file);
        `local_key`: the config's own part, to tell whether a reload changed it; `mark()`: the watch's (the file as
        it is now is the one read); `new_upstream(spec)`: an Upstream; `changed()`: the tool set changed."""
        self.read, self.mark = read, mark
        self.local, self.local_key = list(local), local_key  # the config's own sources, and their part of the file
        self.upstreams = {}  # id -> Upstream, of the active namespace, in config order
        self.namespace, self.new_upstream, self.instances = namespace, new_upstream, instances
        self.log, self.config_path, self.changed = log, config_path, changed

    def start(self, events, upstreams):
        """Serve `upstreams`, and start the config's own sources, their changes going to `events`."""
        self.events = events
        self.upstreams = upstreams
        for source in self.local:
            source.start(events)

    async def reload(self):
        """Read the config again; restart only what changed: the report of it. A bad file changes nothing."""
        if not self.read:
            raise ConfigError("this server was not started from a config file")
        while self._reloading and not self._reloading.done():
            await asyncio.wait([self._reloading])
        self._reloading = asyncio.ensure_future(self._reload())
        return await asyncio.shield(self._reloading)

    async def _reload(self):
        self.mark()
        local, plan, local_key = self.read()
        error = select_namespace(plan.namespaces, self.namespace.requested, plan.default, plan.default_key)[2]
        if error and not self.namespace.refusal:
            raise ConfigError("%s: %s; the configuration in use stays as it was" % (self.config_path, error))
        local_changed = local_key != self.local_key
        if local_changed:
            for source in self.local:
                await source.close()
            self.local, self.local_key = list(local), local_key
            for source in self.local:
                source.start(self.events)
        specs = self.namespace.apply(plan)
        old, new = self.upstreams, {}
        report = plan_changes({sid: getattr(upstream.spec, "origin", upstream.spec) for sid, upstream in old.items()},
                              specs)
        if local_changed:
            report["localToolsReloaded"] = True
        for sid, spec in specs.items():
            upstream = old.get(sid)
            if not upstream:
                new[sid] = self.new_upstream(spec)
            elif sid in report["restarted"]:
                running = upstream.state == "running"
                await upstream.stop("its configuration changed")
                fresh = new[sid] = self.new_upstream(spec)
                fresh.stays_stopped_as(upstream)  # servers_stop holds across reloads
                if running and fresh.usable() and not upstream.user_stopped:
                    fresh.start(wait_backoff=False)
            else:
                upstream.update(spec.listed())
                new[sid] = upstream
        for sid in report["removed"]:
            await old[sid].stop("it was removed from the config")
        self.instances.stop_servers(report["removed"] + report["restarted"], "its configuration changed")
        self.upstreams = new
        report["namespace"] = self.namespace.name
        if self.namespace.refusal:
            report["error"] = self.namespace.refusal.message
        self.log.debug("config reloaded: %s", json.dumps(report))
        self.changed()
        return report


class Aggregator(Source):
    """The config's own sources plus upstream servers, as one source (see the section comment)."""

    dynamic = True
    resources = True
    prompts = True
    completions = True  # upstreams complete their prompts' and templates' arguments (one that cannot: -32601)
    subscribable = True  # and take resource subscriptions (one that cannot: -32601)
    skill_methods = True  # it may learn of its servers' skills by listing
    _reading = None  # the task reading listings from disk

    @property
    def skills(self):
        """Skills of its own, or a server whose last listing declared the skills extension."""
        return any(s.skills for s in self.local) or bool(self.upstream_skills.servers())

    @property
    def refusal(self):
        """What every request gets when the config's namespace cannot be chosen (see Namespace)."""
        return self.namespace.refusal

    def __init__(self, local, plan: UpstreamPlan, runner: ProcessRunner, log: Log, *, namespace=None,
                 separator="__", manager_tools=True, eager=False, reload=None, config_path=None,
                 watch_interval=RESCAN_INTERVAL, cache_dir=None, local_key=None, sign_in=None, admits=None,
                 metrics=None, tool_search=(None, TOOL_SEARCH_THRESHOLD, ()), along=None):
        """`metrics`: the Guard's CallMetrics (servers_list shows them); `tool_search`: the config's toolSearch,
        threshold and pins (check shows them); `along`: the Aggregator of /mcp when this one serves a
        /mcp/<namespace> URL, whose client link (downstream, bridge) it uses and whose servers it runs with
        (each server runs once, whichever URL started it)."""
        self.runner, self.log = runner, log
        self.metrics, self.tool_search, self.along = metrics, tool_search, along
        self.sign_in = sign_in  # the config's signIn and people (read_sign_in, kept current by reloads), or None
        self.admits = admits    # the people rule (Sign-in: admits): who a namespace's `people`, or `admins`, names
        self.separator = separator
        self.namespace = Namespace(namespace, separator, config_path, log)
        self.manager_tools = manager_tools
        self.eager = eager
        self.config_path = config_path
        self.cache_dir = cache_dir or user_cache_dir()
        self._tools = {}        # listed name -> ("local", source, name) / ("upstream", Upstream, name) / ("manager", name)
        self._denied = {}       # name -> why: tools a permission leaves out (calls get TOOL_DENIED)
        self._uris = {}         # resource uri -> Upstream
        self._prompt_routes = {}
        self.watch = ConfigWatch(config_path, watch_interval, log, self.reload)
        self._specs = self.namespace.apply(plan)
        self.signing_in = {}  # server id -> (the sign-in URL's future, the sign-in's, elicitation id): _sign_in_by_url
        self.manager = ManagerTools(self.namespace, lambda: self.upstreams, self.reload, metrics, admits)
        self.bridge = along.bridge if along else InputBridge()
        self.downstream = along.downstream if along else Downstream(self, self.bridge)
        self.shared = along.shared if along else {}  # server id -> the Upstream of namespace URLs, where /mcp runs none
        self.instances = IsolatedInstances(runner, log, self.downstream, self.cache_dir, config_path,
                                           self.namespace.manager_name("servers_start"))
        self.upstream_skills = UpstreamSkills(self.namespace, log, lambda: self.upstreams, self._active, self._discover,
                                              lambda: self.local)
        self.config = ConfigReload(reload, local, local_key, self.namespace, log, config_path, self.watch.mark,
                                   self._new_upstream, self.instances, self.downstream.changed)

    @property
    def local(self):
        """The config's own sources (a reload may replace them)."""
        return self.config.local

    @property
    def upstreams(self):
        """id -> Upstream, of the active namespace, in config order (a reload replaces them). A namespace URL's
        server that /mcp runs too is /mcp's current one: a /mcp reload that restarts it restarts it for every URL,
        and no URL starts its stopped process again beside the new one."""
        if self.along is None:
            return self.config.upstreams
        current = self.along.upstreams
        return {sid: current.get(sid, upstream) for sid, upstream in self.config.upstreams.items()}

    def _new_upstream(self, spec: UpstreamSpec) -> Upstream:
        return Upstream(spec.listed(), self.runner, self.log, self.downstream, self.cache_dir,
                        config_path=self.config_path, start_tool=self.namespace.manager_name("servers_start"))

    async def _sign_in_by_url(self, upstream: Upstream, ctx):
        """Issue 45.5: a URL server's sign-in can no longer be refreshed, and mcpstudio may not open a browser.
        A client that declared `elicitation.url` is given the sign-in's URL (McpError -32042, URL mode); the flow
        finishes in the background (the redirect comes to mcpstudio's loopback callback: the browser runs on this
        machine), then notifications/elicitation/complete tells the client to call again. Never for a signed-in
        person (the server's sign-in is everyone's: the admin's `mcpstudio login`). None: no URL to give."""
        spec, session = upstream.spec, getattr(ctx, "session", None)
        declared = _object(ctx.capabilities if ctx.modern else session.client_capabilities) if session else {}
        if spec.oauth is None or getattr(session, "person", None) is not None or not isinstance(
                _object(declared.get("elicitation")).get("url"), dict):
            return None
        pending = self.signing_in.get(spec.id)
        if pending is None or pending[1].done():
            import secrets
            loop = asyncio.get_running_loop()
            shown, elicitation = loop.create_future(), secrets.token_urlsafe(12)
            oauth = getattr(upstream.client.channel, "oauth", None) or OAuthClient(  # an Upstream always has a client
                spec.url, spec.key, spec.oauth, say=lambda text: self.log.info("%s", text), config=self.config_path)

            def show(url):
                loop.call_soon_threadsafe(lambda: shown.done() or shown.set_result(url))

            def finished(flow):
                error = OAuthError("the sign-in was stopped") if flow.cancelled() else flow.exception()
                if not shown.done():
                    shown.set_exception(error or OAuthError("the sign-in ended without a URL"))
                elif error is None and not ctx.modern and not session.closed:  # the 2026-07-28 era has no stream
                    session.notify("notifications/elicitation/complete", {"elicitationId": elicitation})
                if error is not None:
                    self.log.info("server %s: the sign-in by the client's URL failed: %s", spec.id, error)
            flow = loop.run_in_executor(None, lambda: oauth.sign_in({}, [], opener=show))
            flow.add_done_callback(finished)
            pending = self.signing_in[spec.id] = (shown, flow, elicitation)
        try:
            url = await asyncio.wait_for(asyncio.shield(pending[0]), OAUTH_HTTP_TIMEOUT)
        except (OAuthError, OSError, asyncio.TimeoutError):
            return None
        message = "server %s needs a sign-in: open the URL and sign in, then call again" % spec.key
        return McpError(URL_ELICITATION_REQUIRED, message, {"elicitations": [
            {"mode": "url", "elicitationId": pending[2], "url": url, "message": message}]})

    async def _own(self, upstream: Upstream, ctx) -> Upstream:
        """Where a read, a prompt or a completion of `ctx` goes: as a call's (IsolatedInstances.instance), so what
        a person reads of an isolated server comes from their own process; what keeps it from them is a request
        error."""
        try:
            return await self.instances.instance(upstream, ctx)
        except ToolError as exc:
            raise McpError(INVALID_PARAMS, str(exc), {"server": upstream.spec.id}) from None

    def identify(self, instance):
        """Name the prompt rounds its servers' questions park after `instance` (--http)."""
        self.bridge.identify(instance)

    def holds(self, state):
        """Whether `state` names a prompt round of its servers' questions."""
        return state in self.bridge.parked

    def busy(self):
        """Whether a prompt round of its servers' questions still waits."""
        return bool(self.bridge.calls)

    def sweep_instances(self, ended=None):
        """Stop the isolated instances of sessions that ended (`ended` just did), and those idle (IsolatedInstances)."""
        self.instances.sweep(ended)

    # -- the source contract ---------------------------------------------------------

    def start(self, events):
        """Hand the events to the local sources and begin background work (watch, health)."""
        self.events = events
        self.config.start(events, {sid: self._started_with(sid, spec) for sid, spec in self._specs.items()})
        self.watch.start()

    def _started_with(self, sid, spec):
        """The Upstream of the server `sid`: a namespace's URL runs the one an earlier URL runs (/mcp's first)."""
        if self.along is None:
            return self._new_upstream(spec)
        if sid in self.along.upstreams:  # as /mcp runs it now (see upstreams)
            return self.along.upstreams[sid]
        if sid not in self.shared:  # a server of namespaces /mcp does not serve: the first of their URLs starts it
            self.shared[sid] = self._new_upstream(spec)
        return self.shared[sid]

    def session_started(self, session=None):
        """A client finished `initialize`: start eager and uncached servers, offering each what it offers."""
        if session:
            self.downstream.started(session)
        asyncio.ensure_future(self._start_early())

    def set_level(self, level, session):
        """The client chose a log level: every running server is told, and each server started later."""
        if session is self.downstream.session:
            self.downstream.chose_level(level)
            for upstream in self.upstreams.values():
                if upstream.state == "running" and "logging" in upstream.client.capabilities and not upstream.client.modern:
                    asyncio.ensure_future(upstream.set_level(level))

    def client_notification(self, method, params, session):
        """The client's roots changed: tell every running server that was offered them."""
        if session is self.downstream.session:
            for upstream in self.upstreams.values():
                if upstream.state == "running" and "roots" in upstream.client.offered:
                    upstream.client.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _start_early(self):
        """Start the eager servers, and those with nothing cached (the client lists tools next)."""
        await self._read_caches()
        for upstream in self.upstreams.values():
            if upstream.usable() and upstream.state == "stopped" and (
                    upstream.spec.eager or self.eager or upstream.known() is None):
                upstream.start()

    async def _read_caches(self):
        """Read the on-disk listings not read yet, in worker threads: never on the event loop."""
        while self._reading and not self._reading.done():
            await asyncio.wait([self._reading])  # one reading at a time: each file is read once
        unread = [u for u in self.upstreams.values() if u.cached is None and u.listing is None]
        if unread:
            self._reading = asyncio.ensure_future(self._read(unread))
            await asyncio.wait([self._reading])

    @staticmethod
    async def _read(upstreams):
        loop = asyncio.get_running_loop()
        for upstream, entry in zip(upstreams, await asyncio.gather(*(loop.run_in_executor(None, u.cache.read)
                                                                      for u in upstreams))):
            upstream.read_cache(entry)

    def reload_signal(self):
        """What SIGHUP calls: re-read the config file."""
        self.log.info("SIGHUP: reading %s again", self.config_path)
        asyncio.ensure_future(self.watch.reread())

    def _active(self):
        return [u for u in self.upstreams.values() if u.usable()]

    async def _discover(self):
        """Start every server with nothing cached, all at once, and give them LIST_WAIT in all.

        A listing never waits longer: a slower server goes on starting, and its tools
        are cached and announced with list_changed when it has listed them."""
        await self._read_caches()
        missing = [u for u in self._active() if u.known() is None and not u.user_stopped
                   and u.state not in ("stopping", "failed")]  # a failed one starts again on a call
        if not missing:
            return
        now = time.monotonic()
        deadline = max([u.list_wait(now) for u in missing])
        tasks = [u.start() for u in missing]
        wait = deadline - now
        if wait > 0:
            await asyncio.wait(tasks, timeout=wait)
        slow = [u.spec.id for u, task in zip(missing, tasks) if not task.done()]
        if slow:
            self.log.info("still starting: %s; the listing goes on without them (their tools follow with "
                          "list_changed)", ", ".join(slow))

    async def list_tools(self):
        """Every upstream's tools (cached or live) plus the manager tools."""
        await self._discover()
        tools, table, denied = [], {}, {}
        managed = self.manager.listed() if self.manager_tools else []
        for tool, listed in managed:  # reserved: a tool of the same name is renamed, never shadowed
            table[listed["name"]] = ("manager", tool)
        for source in self.local:
            for tool in await source.list_tools():
                name = safe_name(tool["name"], 10 ** 6, table) if tool["name"] in table else tool["name"]
                table[name] = ("local", source, tool["name"])
                tools.append(dict(tool, name=name) if name != tool["name"] else tool)
        entries = []  # (upstream, tool, public name, CuratedTool or None, the key that renamed it or None)
        served = []  # each tool's public name before the namespace's overrides (what they name)
        for upstream in sorted(self._active(), key=lambda u: not u.spec.prefix):  # prefixed names are claimed first
            spec, known = upstream.spec, upstream.known_items("tools")
            if upstream.known() is not None:  # no listing yet (never started, no cache): nothing to check against
                self.namespace.unmatched(spec.overrides, [tool["name"] for tool in known], "server `%s`" % spec.id,
                                         "against the tools it listed when it started" if upstream.listing is not None
                                         else "against its cached listing; again when it starts")
            for tool in known:
                original = tool["name"]
                name = spec.public_name(original, self.separator)
                served.append(self.namespace.plan.curation(None, spec, original, self.separator)[1] if spec.overrides
                              else name)
                why = self.namespace.left_out(spec, original)
                if why is None:
                    try:
                        curated, public, renamed_by = self.namespace.curate(spec, tool)
                    except ConfigError as exc:
                        why = str(exc)
                        self.namespace.refused(name, why)
                if why is not None:
                    if why:  # a call by either name is told why
                        denied[name] = denied[self.namespace.curate_name(spec, original)] = why
                    continue
                entries.append((upstream, tool, public if renamed_by else name, curated, renamed_by))
        claimed = collections.Counter(entry[2] for entry in entries)
        for upstream, tool, name, curated, renamed_by in entries:
            original = tool["name"]
            if renamed_by and (name in table or claimed[name] > 1):  # a new name must be free: refused, never renamed
                why = "%s: `%s` is also the name of another tool; choose another" % (renamed_by, name)
                self.namespace.refused(name, why)
                denied.setdefault(name, why)
                continue
            if name in table:  # never shadowed: the later one is renamed
                name = self.namespace.rename(upstream.spec, original, table)
            table[name] = ("upstream", upstream.spec.id, original, curated)
            described = _described(upstream.spec.key, curated.tool if curated else tool, name)
            # Clients reject a whole listing with one tool lacking an object inputSchema.
            described["inputSchema"] = dict({"type": "object"}, **_object(described.get("inputSchema")))
            tools.append(described)
        overrides = self.namespace.overrides()
        if overrides and all(u.known() is not None for u in self._active()):  # a server not listed yet may have it
            self.namespace.unmatched(overrides, served, "namespace `%s`" % self.namespace.name,
                                     "against its servers' listings")
        tools.extend(listed for _, listed in managed)
        self._tools = table
        self._denied = {name: why for name, why in denied.items() if name not in table}
        return tools

    def manager_names(self):
        """The public names of the manager tools it lists (none with --no-manager-tools)."""
        return {listed["name"] for _, listed in self.manager.listed()} if self.manager_tools else set()

    def denied(self, name):
        """Why a tool of the last listing's servers is left out by a permission (None: it is not)."""
        return self._denied.get(name)

    def cache_route(self, name):
        """(owner, version, tool) the result cache keys a call of `name` by (see Guard): an upstream's id, its
        launch fingerprint and this run of it (None while it is not running), and the tool's name there."""
        route = self._tools.get(name, ("manager", name))
        upstream = route[0] == "upstream" and self.upstreams.get(route[1])
        if not upstream:
            return "", "", name
        return route[1], upstream.version() if upstream.state == "running" else None, route[2]

    def hides(self, name, ctx):
        """Whether the manager tool `name` is hidden from `ctx`'s person: a config that signs people in gives its
        manager tools (stop a shared server, reload, read logs) only to those its `admins` names. Without a
        signed-in person (stdio: the machine's own user) nothing is hidden."""
        person = getattr(getattr(ctx, "session", None), "signed_in", None)
        if self._tools.get(name, ("",))[0] != "manager" or self.sign_in is None or person is None:
            return False
        return not (self.sign_in.get("admins") and self.admits(self.sign_in["admins"], person))

    def command_line(self, name, arguments):
        """What a call of `name` runs: a local tool's command line, or the server and tool it goes to (with
        the server's rules)."""
        route = self._tools.get(name, ("manager",))
        if route[0] == "local":
            return route[1].command_line(route[2], arguments)
        upstream = route[0] == "upstream" and self.upstreams.get(route[1])
        return upstream and {"server": route[1], "tool": route[2], "upstreamTool": route[2],
                             "namespace": self.namespace.name, "rules": [("server:" + route[1], upstream.spec.rules)],
                             "isolated": None if upstream.spec.isolation == "shared" else upstream.spec.isolation,
                             "curation": route[3] and [route[3].fixed, route[3].defaults, route[3].renamed]}

    def question(self, name, arguments):
        """What a local tool asks the user before it runs (upstreams ask on their own), or None."""
        route = self._tools.get(name)
        if route and route[0] == "local":
            return route[1].question(route[2], arguments)
        return None

    def asks(self, name):
        """Whether a local tool runs an interactive command (upstreams ask through the bridge)."""
        route = self._tools.get(name)
        return bool(route and route[0] == "local" and route[1].asks(route[2]))

    async def call_tool(self, name, arguments, ctx):
        """Forward a call to its upstream (starting it if needed) or run a manager tool."""
        route = self._tools.get(name)
        if not route:
            raise McpError(INVALID_PARAMS, "Unknown tool: %s" % name)
        if route[0] == "local":
            return await route[1].call_tool(route[2], arguments, ctx)
        if route[0] == "manager":
            return await self.manager.call(route[1], arguments, ctx)
        original, curated = route[2], route[3]
        entry = upstream = None
        try:
            upstream = self._upstream(route[1])
            self.namespace.check_permitted(upstream.spec, name, original)
            if curated:  # checked against the schema the model saw, then sent as the server expects it
                arguments = curated.arguments(arguments)
            upstream = await self.instances.instance(upstream, ctx)
            entry = self.instances.calling(upstream)  # busy: not stopped to make room while the call runs
            if ctx and ctx.task is not None:  # a task of mcpstudio's: the server's own, where it has them
                await upstream.ready(ctx)
                if upstream.tasks.runs(original, ctx):
                    return await upstream.tasks.call(original, arguments, ctx)
            result = await self.bridge.forward(upstream, "tools/call", {"name": original, "arguments": arguments}, ctx)
            if ctx and not entry:  # a person's own process (isolation): keyed by the server's, with the person
                ctx.served = route[1], upstream.version(), original
            return result
        except UpstreamError as exc:
            if upstream and upstream.bearer and upstream.refused_bearer == upstream.bearer:  # the person's own, refused
                ctx.session.signed_in.refuse("server %s refused it (expired or revoked): sign in again" % upstream.spec.key)
            elif exc.code == SERVER_SIGN_IN and upstream:  # its sign-in could not be refreshed
                asked = await self._sign_in_by_url(upstream, ctx)
                if asked:
                    raise asked from None
                if getattr(getattr(ctx, "session", None), "person", None) is not None:
                    raise ToolError("%s. This sign-in is the gateway's, shared by every person: ask its admin to "
                                    "sign in again" % exc.message.rstrip(".")) from None
            if exc.code in (SERVER_START_FAILED, SERVER_NOT_RUNNING, SERVER_TIMEOUT, SERVER_NOT_FOUND,
                            SERVER_ANSWER_TOO_LARGE, SERVER_SIGN_IN, SERVER_ANSWER_LOST):
                raise ToolError(exc.message) from None  # a server that cannot answer now: the model can act on it
            raise
        finally:
            if entry:
                self.instances.called(entry)

    async def await_owner(self, name):
        """Wait for the servers that may own tool `name` (their prefix fits) but have never listed their tools:
        still starting when the tools were listed (past LIST_WAIT), or failed, which are started again (the
        user may have signed in meanwhile). True if one of them runs now, so the caller lists again; a
        failure is raised with its reason rather than "Unknown tool"."""
        owners = [u for u in self._active() if u.state in ("starting", "failed") and u.known() is None
                  and not u.user_stopped and (not u.spec.prefix or name.startswith(u.spec.prefix + self.separator))]
        if not owners:
            return False
        self.log.info("%s: waiting for %s to list its tools", name, ", ".join(u.spec.id for u in owners))
        await asyncio.wait([u.start(wait_backoff=False) for u in owners])  # each bounded by its startupTimeout
        if any(u.state == "running" for u in owners):
            return True
        raise McpError(INVALID_PARAMS, "Unknown tool: %s: server `%s` has not listed its tools: %s" % (
            name, owners[0].spec.id, owners[0].last_error or "it failed to start"))

    def _upstream(self, server_id) -> Upstream:
        """The server routes name by id: a reload may have replaced or removed it since the listing."""
        upstream = self.upstreams.get(server_id)
        if not upstream:
            raise UpstreamError(SERVER_NOT_FOUND, "server `%s` is no longer configured (the config was reloaded); "
                                "list the tools again" % server_id, {"server": server_id})
        return upstream

    async def list_resources(self):
        """Every running or cached upstream's resources."""
        return await self._listing_of("resources", "uri", "list_resources")

    async def list_resource_templates(self):
        """Every running or cached upstream's resource templates."""
        return await self._listing_of("resourceTemplates", None, "list_resource_templates")

    async def _listing_of(self, key, route_key, local_method):
        """Its local sources' `local_method`, then its servers' `key` items; with a `route_key` (resources: the
        URI) each is routed by it (_uris), a URI that several servers list being served by none."""
        await self._discover()
        listing, routes = [], {}
        for source in self.local:
            if source.resources:
                listing.extend(await getattr(source, local_method)())
        shared = shared_uris([(u.spec.id, u.known_items(key)) for u in self._active()] if route_key else ())
        for uri, servers in shared.items():  # refused: no server takes a resource another one lists
            self.log.warn_once("servers %s list the resource %s: none of them serves it (disable all but one, or put "
                               "them in different namespaces)", " and ".join("`%s`" % s for s in servers), uri)
        for upstream in self._active():
            known = upstream.known() or {}
            for item in (known.get(key) or ()):
                if key == "resources" and isinstance(known.get("skills"), dict) and item["uri"][:8] == "skill://":
                    item = dict(item, uri=skill_uri(upstream.spec.id, item["uri"]))  # as skills/list
                if route_key is not None:
                    if item.get(route_key) in routes or item.get(route_key) in shared:
                        continue  # a server that lists a URI twice: the first
                    routes[item[route_key]] = upstream.spec.id
                listing.append(item)
        if route_key is not None:
            self._uris = routes
        return listing

    async def read_resource(self, uri, ctx):
        """Route a read to the upstream that lists `uri` or a matching template."""
        route = await self.upstream_skills.route(uri)
        if route:  # a server's skill file: its bytes, under the URI the client asked for
            result = await self.upstream_skills.forward(route[0], "resources/read", {"uri": route[1]}, ctx)
            return dict(result, contents=[dict(c, uri=uri) if isinstance(c, dict) else c
                                          for c in result.get("contents") or ()])
        for source in self.local:
            if source.resources:
                result = await source.read_resource(uri, ctx)
                if result is not None:
                    return result
        if uri not in self._uris:
            await self.list_resources()
        if uri in self._uris:
            return await (await self._own(self._upstream(self._uris[uri]), ctx)).forward("resources/read", {"uri": uri},
                                                                                         ctx)
        for upstream in self._active():  # a URI no listing named: the server with a matching template
            for template in upstream.known_items("resourceTemplates"):
                pattern = _uri_pattern(template.get("uriTemplate", "").replace("{+", "{").replace("{/", "/{"))[0]
                if pattern and pattern.fullmatch(uri):
                    return await (await self._own(upstream, ctx)).forward("resources/read", {"uri": uri}, ctx)
        return None

    async def list_skills(self):
        return await self.upstream_skills.list()

    async def get_skill(self, uri):
        return await self.upstream_skills.get(uri)

    async def read_directory(self, uri):
        return await self.upstream_skills.read_directory(uri)

    async def list_prompts(self):
        """The config's own prompts (its skills'), then every upstream's."""
        await self._discover()
        listing, table = [], {}
        for source in self.local:
            if source.prompts:
                for prompt in await source.list_prompts():
                    table[prompt["name"]] = (source, prompt["name"])
                    listing.append(prompt)
        for upstream in self._active():
            for prompt in upstream.known_items("prompts"):
                name = upstream.spec.public_name(prompt["name"], self.separator)
                if name in table:
                    name = safe_name(name, 10 ** 6, table)
                table[name] = (upstream.spec.id, prompt["name"])
                listing.append(_described(upstream.spec.key, prompt, name))
        self._prompt_routes = table
        return listing

    async def get_prompt(self, name, arguments, ctx):
        """Forward `prompts/get` to its upstream."""
        route = self._prompt_routes.get(name)
        if not route:
            raise McpError(INVALID_PARAMS, "Unknown prompt: %s" % name)
        if not isinstance(route[0], str):  # a local source's
            return await route[0].get_prompt(route[1], arguments, ctx)
        upstream = await self._own(self._upstream(route[0]), ctx)
        result = await self.bridge.forward(upstream, "prompts/get", {"name": route[1], "arguments": arguments}, ctx)
        if not isinstance((upstream.known() or {}).get("skills"), dict) or not isinstance(result.get("messages"), list):
            return result
        # A server whose skills are served under skill://<id>/: the URIs its prompts name (a skill's prompt
        # lists its files) are the ones a client reads here.
        return dict(result, messages=[dict(m, content=self._served_content(upstream.spec.id, m["content"]))
                                      if isinstance(m, dict) and isinstance(m.get("content"), dict) else m
                                      for m in result["messages"]])

    @staticmethod
    def _served_content(server_id, content):
        """A prompt message's content of a server whose skills are served under skill://<server id>/."""
        if content.get("type") == "text":
            return dict(content, text=skill_text(server_id, content.get("text")))
        if content.get("type") == "resource_link":
            return dict(content, uri=skill_uri(server_id, content.get("uri")))
        if content.get("type") == "resource" and isinstance(content.get("resource"), dict):
            return dict(content, resource=dict(content["resource"], uri=skill_uri(server_id, content["resource"].get("uri"))))
        return content

    async def subscribe(self, method, uri, ctx):
        """Pass `resources/subscribe` or `unsubscribe` to the server that lists `uri`; None if none does."""
        if uri not in self._uris:
            await self.list_resources()
        if uri not in self._uris:
            return None
        upstream = self._upstream(self._uris[uri])
        await upstream.ready(ctx)
        if upstream.client.modern:  # no resources/subscribe there: its subscriptions/listen names the URI
            return await upstream.listen_stream.watch(uri, method == "resources/subscribe")
        return await upstream.forward(method, {"uri": uri}, None if upstream.client.dual else ctx)  # handshake era

    async def complete(self, ref, params, ctx):
        """Forward `completion/complete` to the upstream that owns the prompt or resource (template) `ref`
        names, under its own name; None when no upstream does."""
        if ref["type"] == "ref/prompt":
            route = self._prompt_routes.get(ref.get("name"))
            if route and not isinstance(route[0], str):  # a local source's prompt (a skill's: no arguments)
                return await route[0].complete(dict(ref, name=route[1]), params, ctx)
            upstream, ref = (self._upstream(route[0]), dict(ref, name=route[1])) if route else (None, ref)
        else:
            uri = ref.get("uri")
            upstream = next((u for u in self._active() for t in u.known_items("resourceTemplates")
                             if t.get("uriTemplate") == uri), None)
            if not upstream and uri in self._uris:
                upstream = self._upstream(self._uris[uri])
        if not upstream:
            return None
        return await (await self._own(upstream, ctx)).forward("completion/complete", dict(
            {key: params[key] for key in ("argument", "context") if key in params}, ref=ref), ctx)

    async def close(self):
        """Stop every upstream (stdin closed, SIGTERM, SIGKILL) and the file watch."""
        self.watch.close()
        self.bridge.close()
        self.instances.close()
        # A server still starting for its first listing: let it finish, briefly, so that its tools are
        # cached for the next run (a client that gives up on a slow server would otherwise never see them).
        first = [u for u in self.upstreams.values() if u.state == "starting" and u.known() is None]
        if first:
            self.log.info("waiting up to %g s for %s to list its tools, to cache them", CACHE_LINGER,
                          ", ".join(u.spec.id for u in first))
            await asyncio.wait([u.start() for u in first], timeout=CACHE_LINGER)
        running = dict.fromkeys(list(self.upstreams.values()) + list(self.config.upstreams.values()))  # (see upstreams)
        await asyncio.gather(*(u.stop("mcpstudio is exiting") for u in list(running) + self.instances.upstreams()),
                             return_exceptions=True)
        for source in self.local:
            await source.close()

    # -- reload ---------------------------------------------------------------------------

    async def reload(self):
        """Read the config again (ConfigReload): the report of what changed."""
        return await self.config.reload()


def aggregator_for(local, info, load, path, runner, log, options, script_options, admits=None, metrics=None,
                   along=None) -> Aggregator:
    """The Aggregator of a config with MCP servers; `load()` reads the file again (reloads); `admits` is the
    people rule (who a namespace's `people` or the config's `admins` names); `metrics` the guard's counters;
    `along` the Aggregator of /mcp, when this one is a /mcp/<namespace> URL's (see Aggregator)."""
    def reload():
        _, found, again = load()
        if info["sign_in"] is not None:  # a person taken out of `people` is signed out now, not at the next start
            info["sign_in"]["people"] = (again["sign_in"] or {}).get("people") or {}
            info["sign_in"]["admins"] = (again["sign_in"] or {}).get("admins") or []
        return found, again["upstream"] or UpstreamPlan([], {}, None, "defaultNamespace"), again["local_key"]
    return Aggregator(
        local, info["upstream"], runner, log, namespace=options["namespace"], separator=info["separator"],
        manager_tools=not options["no_manager_tools"], eager=bool(options["eager"]), reload=reload,
        config_path=path, local_key=info["local_key"],
        watch_interval=0 if along else script_options.get("rescan", RESCAN_INTERVAL),  # /mcp's watch reloads
        sign_in=info["sign_in"], admits=admits, metrics=metrics, tool_search=info["tool_search"], along=along)


def served_tool_count(plan: UpstreamPlan, namespace, listings, separator, local=0, manager=True):
    """How many tools serve's tools/list holds for `namespace` (None: every server), the count toolSearch's
    threshold is compared with: the config's `local` tools, the tools of each server's known listing
    (`listings`: id -> tool names) that its filters and permissions keep, and the manager tools."""
    members = plan.namespaces[namespace]["servers"] if namespace in plan.namespaces else None
    count = local + (len(MANAGER_TOOLS) if manager and plan.specs else 0)
    for spec in plan.specs:
        if not spec.disabled and not spec.error and (members is None or spec.id in members):
            count += sum(plan.left_out(namespace, spec, name, separator) is None for name in listings.get(spec.id, ()))
    return count


def local_tool_count(sources):
    """The tools of a config's own sources known before serving (script folders are scanned when served)."""
    return sum(len(source.tools) for source in sources if isinstance(source, TemplateTools))


# --------------------------------------------------------------------------
# Server: the MCP methods
# --------------------------------------------------------------------------
# One Server per session: the MCP methods over the catalog, with the guard rails in
# front of every call, tasks, tool search, input on the way and the manager tools
# (all above); serve_stdio runs it over stdin/stdout.

def _name_and_arguments(params, method):
    """`name` and `arguments` of tools/call and prompts/get, checked (-32602 if malformed)."""
    name = params.get("name")
    if not isinstance(name, str):
        raise _invalid_params("%s needs a string `name`" % method)
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise _invalid_params("`arguments` must be an object")
    return name, arguments


def _uri_param(params, method):
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise _invalid_params("%s needs a string `uri`" % method)
    return uri


def _page(key, items, params):
    page, next_cursor = paginate(items, params.get("cursor"))
    result = {key: page}
    if next_cursor:
        result["nextCursor"] = next_cursor
    return result


class Server:
    """The MCP methods over a Catalog, for one client session."""

    def __init__(self, catalog: Catalog, log: Log, title="mcpstudio", instructions=None,
                 guard: Guard | None = None, search=None):
        self.catalog = catalog
        self.guard = guard or Guard(log)
        self.log = log
        log.mask_by(catalog)  # a tools/call's secret arguments, by its tool's schema
        self.title = title
        self.instructions = instructions
        self.session = None
        self.sessions = []  # handshake-era sessions past `initialized` (stdio: at most one)
        self.search = ToolSearch(catalog, self.tools_call, *search) if search else None  # `toolSearch`: (mode, threshold, pins, separator)
        self.views = []  # the Aggregator of each /mcp/<namespace> served: its Server is told of changes too
        self._held_logs = []  # log notifications from before the client was ready
        self.methods = {
            "initialize": self.initialize,
            "ping": self.ping,
            "tools/list": self.tools_list,
            "tools/call": self.tools_call,
            "logging/setLevel": self.set_level,
            "tasks/get": self.tasks_get,
            "tasks/result": self.tasks_result,
            "tasks/list": self.tasks_list,
            "tasks/cancel": self.tasks_cancel,
        }
        self.tasks = TaskStore()
        self.prompts = InputBridge()  # 2026-07-28: commands kept alive while their questions go back as input_required
        if catalog.serves("resources"):
            self.methods.update({
                "resources/list": self.resources_list,
                "resources/read": self.resources_read,
                "resources/templates/list": self.resource_templates_list,
            })
        if catalog.serves("prompts"):
            self.methods.update({"prompts/list": self.prompts_list, "prompts/get": self.prompts_get})
        if catalog.serves("completions"):
            self.methods["completion/complete"] = self.complete
        if catalog.serves("subscribable"):
            self.methods.update({method: (lambda params, ctx, method=method: self.subscribe(params, ctx, method))
                                 for method in ("resources/subscribe", "resources/unsubscribe")})
        if catalog.serves("skill_methods"):  # skills folders, or an aggregator whose upstreams may add skills
            self.methods.update({"skills/list": self.skills_list, "skills/get": self.skills_get,
                                 "resources/directory/read": self.directory_read})
        self._modern_methods = None  # 2026-07-28's methods, built on the first request of that era
        self._snapshots = {}  # listing key -> what its last first page was cut from
        self.subscriptions = []  # (CallContext of a subscriptions/listen, what it subscribed to)
        self.subscribers = {}    # resource URI -> who subscribed to it: handshake-era Sessions, listens' CallContexts

    def start(self, session=None):
        """Begin the sources' background work, their changes reported here; `session`: the one client (stdio;
        over HTTP each client has a session of its own)."""
        self.session = session
        self.catalog.start(self)

    @property
    def modern_methods(self):
        """The 2026-07-28 method table, built on the first request of that era."""
        if not self._modern_methods:
            self._modern_methods = modern_methods(self)
        return self._modern_methods

    def dispatch(self, method, params, ctx: CallContext):
        """Answer one request: the era's method table, or -32601 for an unknown method."""
        meta = params.get("_meta")
        if ctx.modern or method == "server/discover" or META_VERSION in _object(meta):
            return dispatch_modern(self, method, params, ctx, meta)  # (in the section below)
        refusal = self.catalog.refusal
        if refusal:
            raise refusal
        handler = self.methods.get(method)
        if not handler:
            raise McpError(METHOD_NOT_FOUND, "Method not found: %s" % method)
        return handler(params, ctx)

    def server_info(self):
        """This server's `serverInfo` (name, title, version)."""
        return {"name": "mcpstudio", "title": self.title, "version": __version__}

    def notification(self, method, params, session=None):
        """Handle one notification from a client (initialized, cancelled, ...)."""
        session = session or self.session
        if method == "notifications/initialized" and session and session not in self.sessions:
            self.sessions.append(session)
            held, self._held_logs = self._held_logs, []
            for level, text, logger, meta in held:
                session.log_to_client(level, text, logger, meta)
        elif method == "notifications/roots/list_changed":
            for source in self.catalog.sources:
                source.client_notification(method, params, session)

    def forget(self, session):
        """A session ended (an HTTP session deleted or expired): its tasks stop too."""
        if session in self.sessions:
            self.sessions.remove(session)
        self.tasks.forget(session)
        for uri, holders in list(self.subscribers.items()):  # its subscriptions end
            holders.discard(session)
            if not holders:
                del self.subscribers[uri]
        for source in self.catalog.sources:  # an Aggregator: the session's own servers stop
            source.sweep_instances(session)

    def identify(self, instance: Instance):
        """Name its tasks and parked prompt rounds (its own, and its servers' through each Aggregator) after
        `instance`, so a load balancer routes by their ids (--http)."""
        self.tasks.identify(instance)
        self.prompts.identify(instance)
        for source in self.catalog.sources:
            source.identify(instance)

    def holds(self, params):
        """Whether a request's `taskId` or `requestState` names state this process holds (a leaving instance
        still serves those)."""
        key, state = params.get("taskId"), params.get("requestState")
        return (isinstance(key, str) and key in self.tasks.tasks) or (isinstance(state, str) and (
            state in self.prompts.parked or any(source.holds(state) for source in self.catalog.sources)))

    def busy(self):
        """Whether a task still runs or a prompt round waits (a leaving instance gives them its drain)."""
        return any(t.status not in TERMINAL for t in self.tasks.tasks.values()) or bool(self.prompts.calls) or any(
            source.busy() for source in self.catalog.sources)

    # -- events from sources --------------------------------------------------

    def source_changed(self, source):
        """A source's tools or resources changed: tell clients that listen."""
        self.catalog.changed()  # calls route by the new tool set, not the last listing's
        for hub in self.views:
            hub.events.source_changed(hub)
        changed = [(key, method) for key, method, relevant in (
            ("toolsListChanged", "notifications/tools/list_changed", self.catalog.dynamic),
            ("resourcesListChanged", "notifications/resources/list_changed", source.resources),
            ("promptsListChanged", "notifications/prompts/list_changed", source.prompts)) if relevant]
        for session in self.sessions:
            for _, method in changed:
                session.notify(method, {})
        for ctx, wanted in list(self.subscriptions):  # 2026-07-28 clients, through subscriptions/listen
            for key, method in changed:
                if wanted.get(key):
                    ctx.notify(method, {"_meta": {META_SUBSCRIPTION: ctx.request_id}})

    def source_notification(self, method, params, owner=None):
        """A notification from a source for every client (a subscribed resource was updated; an isolated
        process's: its owner's only); a 2026-07-28 client hears of the resources its subscriptions/listen names."""
        updated = method == "notifications/resources/updated"  # for who subscribed to its URI alone
        for session in self.sessions:
            if owned_by(session, owner) and (not updated or self.subscribed(params.get("uri"), session)):
                session.notify(method, params)
        for ctx, granted in list(self.subscriptions):
            if params.get("uri") in granted.get("resourceSubscriptions", ()) and owned_by(ctx.session, owner):
                ctx.notify(method, dict(params, _meta={META_SUBSCRIPTION: ctx.request_id}))

    def source_log(self, level, text, logger="mcpstudio", owner=None, meta=None):
        """A log line from a source, forwarded to clients that asked for that level; an isolated process's
        (`owner`) only to its person's (or session's) sessions, never held for a later client. A line nobody
        heard is held for the first client only while no person signs in: a later session may be anyone's."""
        for session in self.sessions:
            if owned_by(session, owner):
                session.log_to_client(level, text, logger, meta)
        if not self.sessions and owner is None and not self.guard.sign_in and len(self._held_logs) < 100:
            self._held_logs.append((level, text, logger, meta))

    # -- methods ------------------------------------------------------------------

    def capabilities(self, modern=False):
        """The capabilities this server declares, from the kinds of its sources (and the era: tasks are
        a capability in 2025-11-25, an extension in 2026-07-28)."""
        capabilities = {"tools": {"listChanged": self.catalog.dynamic}, "logging": {}}
        extensions = {TASKS_EXTENSION: {}} if modern else {}
        if not modern:
            capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        if self.catalog.serves("resources"):
            capabilities["resources"] = {"listChanged": self.catalog.dynamic}
            if self.catalog.serves("subscribable"):
                capabilities["resources"]["subscribe"] = True
        if self.catalog.serves("prompts"):
            capabilities["prompts"] = {"listChanged": self.catalog.dynamic}
        if self.catalog.serves("completions"):
            capabilities["completions"] = {}
        if self.catalog.serves("skills"):
            extensions[SKILLS_EXTENSION] = {"directoryRead": True}
        if extensions:
            capabilities["extensions"] = extensions
        return capabilities

    def initialize(self, params, ctx):
        """The handshake: echo a supported protocol version, else answer with the latest."""
        requested = params.get("protocolVersion")
        version = requested if requested in PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        client = _object(params.get("clientInfo"))
        self.log.debug("initialize from %s %s, protocol %s (answering %s)",
                       client.get("name", "?"), client.get("version", "?"), requested, version)
        result = {
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": self.server_info(),
        }
        if self.instructions:
            result["instructions"] = self.instructions
        ctx.session.client_capabilities = _object(params.get("capabilities"))
        ctx.session.protocol_version = version
        ctx.session.client_info = client
        self.catalog.session_started(ctx.session)
        return result

    def ping(self, params, ctx):
        """`ping`: an empty result."""
        return {}

    async def tools_list(self, params, ctx):
        """`tools/list`, paginated (with `toolSearch`: what this client is shown); a later page reuses the
        listing the first page built until a source changes."""
        tools = self.catalog.listing if "cursor" in params and not self.catalog.stale else await self.catalog.tools()
        ups = [up for source in self.catalog.sources for up in source.upstreams.values()]
        # Nothing to list but mcpstudio's own manager tools, ever: say why, where a client shows it (a listing
        # of manager tools alone reads as "connected" while nothing works). The initialize result cannot say
        # it: it is sent before any server has started.
        managed = {name for source in self.catalog.sources for name in source.manager_names()}
        if ups and all(t["name"] in managed for t in tools) and all(up.state == "failed" for up in ups):
            raise McpError(SERVER_START_FAILED, "; ".join("server `%s` (%s) failed to start: %s" % (
                up.spec.id, up.spec.display(), ManagerTools.shown(up, up.last_error)) for up in ups)
                + "; once it is fixed, a call of one of its tools starts it again (a listing does not), or restart "
                  "mcpstudio")  # (Aggregator.await_owner)
        tools = [tool for tool in tools if not self.catalog.hidden(tool["name"], ctx)]
        return _page("tools", self.search.listing(tools, params, ctx) if self.search else tools, params)

    async def tools_call(self, params, ctx):
        """`tools/call`: route by public name, run with this request's CallContext; a ToolError on the way is
        the call's isError result (tool_result)."""
        return await tool_result(self._tools_call(params, ctx))

    async def _tools_call(self, params, ctx):
        name, arguments = _name_and_arguments(params, "tools/call")
        if self.search and self.search.handles(name):
            return await self.search.call(name, params, arguments, ctx)
        route = await self.catalog.route(name)
        if not route or self.catalog.hidden(name, ctx):  # a manager tool of a team gateway: there for admins only
            known = [t["name"] for t in await self.catalog.tools() if not self.catalog.hidden(t["name"], ctx)]
            denial = self.catalog.denial(name)
            if denial:
                raise McpError(TOOL_DENIED, "Tool denied: %s: %s" % (name, denial), {"tool": name})
            listed = ", ".join(known[:20]) + (" and %d more" % (len(known) - 20) if len(known) > 20 else "")
            raise McpError(INVALID_PARAMS, "Unknown tool: %s (this server has: %s)" % (name, listed or "no tools"))
        source, original, support, name = route  # the name as listed (of a `-`/`_` respelling): the guard sees that tool
        tool = self.catalog.listed.get(name, {})  # before any await: a rescan or reload may drop it meanwhile
        if (ctx.modern and not ctx.prompts and ctx.declared("elicitation")
                and source.asks(original)):  # its questions asked in rounds (a retry resumes it), also through a config's Aggregator
            ctx.prompts = self.prompts
            return await self.prompts.exchange(lambda first: self.tools_call(params, first), "tools/call", name, ctx)
        form = source.question(original, arguments)
        if form:
            wanted = form["requestedSchema"]["required"]  # every property the form asks for
            if not ctx.declared("elicitation"):
                raise ToolError("Not run: %s is asked of the user when left out, and this client cannot ask "
                                "(it declared no elicitation capability); give it in the arguments."
                                % ", ".join(wanted))
            answer = _object(await self._ask(form, params, ctx, "arguments"))
            if answer.get("resultType") == "input_required":
                return answer
            if answer.get("action") != "accept" or not isinstance(answer.get("content"), dict):
                raise ToolError("Not run: the user was asked for %s and answered %s."
                                % (", ".join(wanted), json.dumps(answer.get("action"))))
            arguments = dict(arguments, **{key: value for key, value in answer["content"].items() if key in wanted})
        ctx.read = self.resources_read  # a file given as a resource URI (file_resources); not a closure over ctx
        call = self.guard.call(name, source, original, arguments, ctx, tool,
                               lambda form: self._ask(form, params, ctx, "confirm"))
        if ctx.modern:
            return await self._modern_call(name, call, support, ctx)
        asked = params.get("task")
        if asked is None:
            if support == "required":
                call.close()
                raise McpError(METHOD_NOT_FOUND, "Tool %s runs only as a task: call it with `task` in the params" % name)
            return await call
        ttl = _object(asked).get("ttl", TASK_TTL_MS)
        whole = type(ttl) is int or (type(ttl) is float and ttl.is_integer())  # not NaN, not infinite
        if support == "forbidden":  # -32601 as the spec asks, so not "Invalid params: ..."
            call.close()
            raise McpError(METHOD_NOT_FOUND, "Tool %s does not run as a task (its taskSupport is forbidden): call it "
                           "without `task` in the params" % name)
        problem = ("`task` must be an object" if not isinstance(asked, dict) else
                   "`task.ttl` must be a positive whole number of milliseconds" if not whole or ttl <= 0 else None)
        if problem:
            call.close()
            raise _invalid_params(problem)
        task = self.tasks.start(call, ctx, min(int(ttl), TASK_MAX_TTL_MS), self._status_changed)
        self.log.debug("tool %s runs as task %s", name, task.id)
        return {"task": task.wire()}

    async def _ask(self, form, params, ctx: CallContext, key):
        """The user's answer to `form` (an elicitation/create): asked of the client (handshake era), or taken
        from the retried request's `inputResponses` (2026-07-28), or else an InputRequiredResult to retry with."""
        if not ctx.modern:
            return await ctx.session.request("elicitation/create", form, ASK_TIMEOUT, related=ctx.request_id)
        responses = params.get("inputResponses")
        if responses is not None and not isinstance(responses, dict):
            raise _invalid_params("`inputResponses` must be an object")
        answer = (responses or {}).get(key)
        if answer is None:
            return {"resultType": "input_required",
                    "inputRequests": {key: {"method": "elicitation/create", "params": form}}}
        if not isinstance(answer, dict):
            raise _invalid_params("`inputResponses.%s` must be an elicitation result" % key)
        ctx.answered.add(key)
        return answer

    async def _modern_call(self, name, call, support, ctx: CallContext):
        """2026-07-28: a task when the tool requires one, or an optional one runs past TASK_AFTER (and
        the request declared the extension); otherwise the plain result."""
        if support == "forbidden" or (support == "optional" and (
                not ctx.declared(TASKS_EXTENSION) or self.tasks.full())):
            return await call
        if not ctx.declared(TASKS_EXTENSION):
            call.close()
            raise McpError(MISSING_CAPABILITY, "Tool %s runs only as a task: declare the %s extension in the "
                           "request's client capabilities" % (name, TASKS_EXTENSION), _NEEDS_TASKS)
        task = self.tasks.start(call, ctx, TASK_TTL_MS)
        if support == "optional":
            try:
                await asyncio.wait([task.job], timeout=TASK_AFTER)
            except asyncio.CancelledError:  # the client left before it had a task id
                self.tasks.cancel(task)
                raise
            if task.job.done():  # quick: the plain answer, and no task to remember
                self.tasks.tasks.pop(task.id, None)
                if task.error:
                    raise task.error
                if task.result is None:
                    raise McpError(INTERNAL_ERROR, "the call was cancelled (the server is stopping)")
                return task.result
        return dict(task.wire(), resultType="task")

    def _status_changed(self, task: Task):
        """2025-11-25: tell the session that made a task that it ended (notifications/tasks/status)."""
        if not task.owner.closed:
            task.owner.notify("notifications/tasks/status", task.wire())

    def _task(self, params, ctx) -> Task:
        """The task a tasks/* request names; in 2026-07-28 only for a request that declared the extension."""
        if ctx.modern and not ctx.declared(TASKS_EXTENSION):
            raise McpError(MISSING_CAPABILITY, "tasks/* needs the %s extension in the request's client "
                           "capabilities" % TASKS_EXTENSION, _NEEDS_TASKS)
        if not isinstance(params.get("taskId"), str):
            raise _invalid_params("`taskId` %s: give the task's id, the `taskId` that %s" % (
                "is missing" if params.get("taskId") is None else "must be a string",
                "the tools/call answered with its resultType \"task\"" if ctx.modern else
                "the task-augmented tools/call answered (tasks/list lists them)"))
        return self.tasks.get(params["taskId"], ctx)

    def tasks_get(self, params, ctx):
        """`tasks/get`: the task; in 2026-07-28 with its result or error inlined once it has one."""
        task = self._task(params, ctx)
        reply = task.wire()
        if ctx.modern and task.result is not None:
            reply["result"] = task.result
        elif ctx.modern and task.error:
            reply["error"] = task.error.to_json()
        return reply

    async def tasks_result(self, params, ctx):
        """`tasks/result` (2025-11-25): wait for the end; what the call itself would have answered."""
        task = self._task(params, ctx)
        await task.ended.wait()
        if task.error:
            raise task.error
        if task.result is None:
            raise McpError(INTERNAL_ERROR, "Task %s was cancelled, so it has no result" % task.id)
        return _with_meta(task.result, RELATED_TASK, {"taskId": task.id})

    def tasks_list(self, params, ctx):
        """`tasks/list` (2025-11-25): this session's tasks, oldest first, paginated."""
        return _page("tasks", [task.wire() for task in self.tasks.owned(ctx)], params)

    def tasks_cancel(self, params, ctx):
        """`tasks/cancel`: stop it. 2025-11-25 answers the cancelled task (an ended one is -32602);
        2026-07-28 acknowledges, whatever its state."""
        task = self._task(params, ctx)
        if task.status in TERMINAL and not ctx.modern:
            raise McpError(INVALID_PARAMS, "Cannot cancel task %s: it already ended (%s)" % (task.id, task.status))
        if task.status not in TERMINAL:
            self.tasks.cancel(task)
        return {} if ctx.modern else task.wire()

    def tasks_update(self, params, ctx):
        """`tasks/update` (2026-07-28): input for a task; none of these tasks asks for any, so an ack."""
        self._task(params, ctx)
        return {}

    async def resources_list(self, params, ctx):
        """`resources/list`, paginated."""
        return await self._listing("resources", self.catalog.resources, params)

    async def _listing(self, key, build, params):
        """A listing whose first page builds it and whose next pages page through that same snapshot
        (thousands of skill files are not looked up again for each page)."""
        if params.get("cursor") is None or key not in self._snapshots:
            self._snapshots[key] = await build()
        return _page(key, self._snapshots[key], params)

    async def resources_read(self, params, ctx):
        """`resources/read`."""
        uri = _uri_param(params, "resources/read")
        return await self.guard.record(uri, {}, ctx, {"method": "resources/read"}, self.catalog.read_resource(uri, ctx))

    async def resource_templates_list(self, params, ctx):
        """`resources/templates/list`, paginated."""
        return _page("resourceTemplates", await self.catalog.resource_templates(), params)

    async def prompts_list(self, params, ctx):
        """`prompts/list`, paginated."""
        return _page("prompts", await self.catalog.prompts(), params)

    async def prompts_get(self, params, ctx):
        """`prompts/get`."""
        name, arguments = _name_and_arguments(params, "prompts/get")
        return await self.guard.record(name, arguments, ctx, {"method": "prompts/get"},
                                       self.catalog.get_prompt(name, arguments, ctx))

    async def subscribe(self, params, ctx, method):
        """`resources/subscribe` and `unsubscribe`: passed to the server that holds the URI, for this session."""
        return await self.watch(_uri_param(params, method), ctx.session, method == "resources/subscribe", ctx)

    async def watch(self, uri, holder, on, ctx):
        """Subscribe `holder` (a session, or a 2026-07-28 listen's CallContext) to `uri` (`on`), or unsubscribe it.
        One server connection carries everyone's subscriptions: its updates go only to who subscribed, and the
        server is told to stop only when the last of them unsubscribes (one person's unsubscribe never ends
        another's subscription)."""
        if on:
            result = await self.catalog.subscribe("resources/subscribe", uri, ctx)  # -32002: nothing held
            self.subscribers.setdefault(uri, set()).add(holder)
            return result
        holders = self.subscribers.get(uri, set())
        holders.discard(holder)
        if holders:
            return {}
        self.subscribers.pop(uri, None)
        return await self.catalog.subscribe("resources/unsubscribe", uri, ctx)

    def subscribed(self, uri, holder):
        """Whether `holder` subscribed to `uri` (its resources/updated is for it)."""
        return isinstance(uri, str) and holder in self.subscribers.get(uri, ())

    async def complete(self, params, ctx):
        """`completion/complete`: routed by its reference to the server that owns the prompt or template."""
        ref = params.get("ref")
        if not isinstance(ref, dict) or ref.get("type") not in ("ref/prompt", "ref/resource") or \
                not isinstance(params.get("argument"), dict):
            raise _invalid_params("completion/complete needs `ref` (ref/prompt or "
                                  "ref/resource) and an `argument` object")
        return await self.catalog.complete(ref, params, ctx)
    async def skills_list(self, params, ctx):
        """`skills/list`, paginated (an entry is never split)."""
        return dict(await self._listing("skills", self.catalog.skills, params), ttlMs=SKILLS_TTL_MS, cacheScope="public")

    async def skills_get(self, params, ctx):
        """`skills/get`: one skill's entry by the URI of its SKILL.md."""
        return {"skill": await self.catalog.skill_answer("get_skill", _uri_param(params, "skills/get")),
                "ttlMs": SKILLS_TTL_MS, "cacheScope": "public"}

    async def directory_read(self, params, ctx):
        """`resources/directory/read`: a skill folder's direct children, paginated."""
        children = await self.catalog.skill_answer("read_directory", _uri_param(params, "resources/directory/read"))
        return _page("resources", children, params)

    def set_level(self, params, ctx):
        """`logging/setLevel`: the least severe level sent to this client."""
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise McpError(INVALID_PARAMS, "Invalid level %r: use one of %s" % (level, ", ".join(LOG_LEVELS)))
        ctx.session.log_level, ctx.session.level_chosen = level, True
        for source in self.catalog.sources:
            source.set_level(level, ctx.session)
        return {}


async def serve_stdio(server: Server, runner: ProcessRunner, log: Log, in_fd, out_fd):
    """Serve `server` on the given descriptors until stdin closes or a signal arrives."""
    loop = asyncio.get_running_loop()
    transport = StdioTransport(in_fd, out_fd, log)
    session = Session(transport, server.dispatch, log, server.notification)
    server.start(session)
    stopping = loop.create_future()

    def stop(reason):
        if not stopping.done():
            stopping.set_result(reason)
            log.debug("stopping: %s", reason)

    transport.start(loop, session.receive, lambda: stop("stdin closed"), lambda: stop("stdout closed"))
    runner.pause_with(transport.room)
    _on_stop_signals(loop, stop, server.catalog.reload_signal())
    reason = await stopping
    # On EOF the client has said all it will; let what it asked finish briefly.
    await session.cancel_all(grace=EOF_DRAIN if reason == "stdin closed" else 0)
    await server.tasks.close()
    await server.catalog.close()  # servers first: closing their stdin lets them exit cleanly
    await runner.stop_all()
    runner.close_watchdog()
    transport.close()
    return 0


# --------------------------------------------------------------------------
# Sign-in: people and their access tokens (serve --http as a protected resource)
# --------------------------------------------------------------------------
# With a config's `signIn` (or `people`), `serve --http` wants an access token
# on every request to an MCP URL (RFC 6750) and says where to get one: RFC 9728
# metadata at /.well-known/oauth-protected-resource[/mcp[/NAMESPACE]], named by
# the 401's WWW-Authenticate. A JWT is checked here without a library: its
# signature (RS256: PKCS#1 v1.5 with pow(); ES256: P-256 ECDSA) against the
# issuer's JWKS, then `iss`, `aud` (RFC 8707: this server's URL), `exp` and
# `nbf` with SIGNIN_SKEW. `alg: none` and HMAC are refused: a public key is
# never a MAC secret. An opaque token is asked about (RFC 7662). A small team
# may list static tokens instead, kept as SHA-256 hashes. Pure parts first (the
# JWT, the curve, the people rule); SignIn alone does I/O.

SIGNIN_SKEW = 60               # seconds of clock difference allowed on exp and nbf
SIGNIN_JWKS_REFRESH = 600      # seconds an issuer's JWKS is used before it is fetched again
SIGNIN_KID_REFETCH = 30        # a token with an unknown `kid` fetches the JWKS again at most this often
SIGNIN_ANSWERS = 1000          # tokens whose check (a person, or why not) is kept, SIGNIN_REMEMBER seconds at most
SIGNIN_REMEMBER = 60
SIGNIN_EXCHANGE_MARGIN = 30    # an exchanged token is asked for again this many seconds before it expires
STATIC_PERSON = "static:"      # a listed person's identity (Person.key): never an identity provider's subject
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"  # RFC 8693's grant and token type
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
_JWT_ALGS = ("RS256", "ES256")  # accepted; never none, never HMAC
_SHA256_INFO = bytes.fromhex("3031300d060960864801650304020105000420")  # DigestInfo of SHA-256 (RFC 8017 §9.2)
_P256_P = 2 ** 256 - 2 ** 224 + 2 ** 192 + 2 ** 96 - 1
_P256_N = 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551
_P256_B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604b
_P256_G = (0x6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296,
           0x4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5)
_P256_INFINITY = (1, 1, 0)


def b64url(text):
    """The bytes of unpadded base64url `text` (RFC 7515 §2); ValueError for anything else."""
    if not isinstance(text, str) or not re.fullmatch(r"[A-Za-z0-9_-]*", text) or len(text) % 4 == 1:
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def p256_on_curve(point):
    """Whether (x, y) is a point of P-256: y^2 = x^3 - 3x + b (mod p)."""
    x, y = point
    return 0 <= x < _P256_P and 0 <= y < _P256_P and (y * y - x * x * x + 3 * x - _P256_B) % _P256_P == 0


def _p256_double(point):
    """2 * point on P-256, in Jacobian coordinates (X, Y, Z): x = X/Z^2, y = Y/Z^3 (Z = 0: the point at infinity)."""
    x, y, z = point
    if not z or not y:
        return _P256_INFINITY
    delta, gamma = z * z % _P256_P, y * y % _P256_P
    beta, alpha = x * gamma % _P256_P, 3 * (x - delta) * (x + delta) % _P256_P  # a = -3
    x3 = (alpha * alpha - 8 * beta) % _P256_P
    return x3, (alpha * (4 * beta - x3) - 8 * gamma * gamma) % _P256_P, ((y + z) ** 2 - gamma - delta) % _P256_P


def _p256_add(a, b):
    """a + b on P-256, in Jacobian coordinates."""
    (x1, y1, z1), (x2, y2, z2) = a, b
    if not z1 or not z2:
        return a if z1 else b
    z11, z22 = z1 * z1 % _P256_P, z2 * z2 % _P256_P
    u1, u2 = x1 * z22 % _P256_P, x2 * z11 % _P256_P
    s1, s2 = y1 * z2 * z22 % _P256_P, y2 * z1 * z11 % _P256_P
    h, r = (u2 - u1) % _P256_P, (s2 - s1) % _P256_P
    if not h:
        return _p256_double(a) if not r else _P256_INFINITY
    hh = h * h % _P256_P
    hhh, v = h * hh % _P256_P, u1 * hh % _P256_P
    x3 = (r * r - hhh - 2 * v) % _P256_P
    return x3, (r * (v - x3) - s1 * hhh) % _P256_P, z1 * z2 * h % _P256_P


def p256_combination(u1, u2, q):
    """u1 * G + u2 * q on P-256 (Shamir's trick: one pass over the bits; the numbers are public, so time may
    depend on them), as affine (x, y), or None for the point at infinity."""
    g, q = _P256_G + (1,), q + (1,)
    table = {1: g, 2: q, 3: _p256_add(g, q)}
    out = _P256_INFINITY
    for bit in range(max(u1.bit_length(), u2.bit_length()) - 1, -1, -1):
        out = _p256_double(out)
        pick = (u1 >> bit & 1) | (u2 >> bit & 1) << 1
        if pick:
            out = _p256_add(out, table[pick])
    if not out[2]:
        return None
    inverse = pow(out[2], -1, _P256_P)
    return out[0] * inverse * inverse % _P256_P, out[1] * inverse * inverse * inverse % _P256_P


def es256_verify(public, message, signature):
    """Whether `signature` (r || s, 64 bytes: the JWS form, RFC 7518 §3.4) is `public`'s (x, y) ECDSA P-256
    signature of SHA-256(`message`)."""
    import hashlib
    if len(signature) != 64 or not p256_on_curve(public):
        return False
    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    if not (0 < r < _P256_N and 0 < s < _P256_N):
        return False
    e, w = int.from_bytes(hashlib.sha256(message).digest(), "big"), pow(s, -1, _P256_N)
    point = p256_combination(e * w % _P256_N, r * w % _P256_N, public)
    return point is not None and point[0] % _P256_N == r


def rs256_verify(public, message, signature):
    """Whether `signature` is `public`'s (n, e; 2048 bits at least, e odd and 3 or more) RSASSA-PKCS1-v1_5 SHA-256 signature of
    `message`: the whole encoded block is built and compared, never parsed (no lenient padding)."""
    import hashlib
    import hmac
    n, e = public
    size = (n.bit_length() + 7) // 8
    if n.bit_length() < 2048 or e < 3 or not e % 2 or len(signature) != size or int.from_bytes(signature, "big") >= n:
        return False
    digest = _SHA256_INFO + hashlib.sha256(message).digest()
    block = b"\x00\x01" + b"\xff" * (size - 3 - len(digest)) + b"\x00" + digest
    return hmac.compare_digest(pow(int.from_bytes(signature, "big"), e, n).to_bytes(size, "big"), block)


def jwk_key(jwk):
    """(kid, alg, public key) of a JWK for signatures, RSA (n, e) or EC P-256 (x, y); None for any other key."""
    if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
        return None

    def numbers(*members):  # big-endian unsigned integers in base64url (RFC 7518 §6)
        return tuple(int.from_bytes(b64url(jwk[member]), "big") for member in members)
    try:
        if jwk.get("kty") == "RSA":
            alg, key = "RS256", numbers("n", "e")
            if key[1] < 3 or not key[1] % 2:  # e = 1: the signature is the padded block, which anyone can write
                return None
        elif jwk.get("kty") == "EC" and jwk.get("crv") == "P-256" and len(b64url(jwk["x"])) == len(b64url(jwk["y"])) == 32:
            alg, key = "ES256", numbers("x", "y")
            if not p256_on_curve(key):
                return None
        else:
            return None
    except (KeyError, ValueError):
        return None
    if jwk.get("alg", alg) != alg:
        return None
    return jwk.get("kid"), alg, key


def jwt_parts(token):
    """(header, claims, signed bytes, signature) of a compact JWS with a JSON object payload; TokenError otherwise."""
    pieces = token.split(".") if isinstance(token, str) else []
    try:
        if len(pieces) != 3:
            raise ValueError
        header, claims = (json.loads(b64url(piece).decode("utf-8")) for piece in pieces[:2])
        signature = b64url(pieces[2])
    except BAD_JSON + (UnicodeDecodeError,):  # (RecursionError: JSON nested thousands deep)
        raise TokenError("not a JWT (three base64url parts, JSON objects)")
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise TokenError("not a JWT (three base64url parts, JSON objects)")
    return header, claims, (pieces[0] + "." + pieces[1]).encode("ascii"), signature


def jwt_key(header, keys):
    """The keys of `keys` [(kid, alg, key)] that may have signed a JWT with `header`; TokenError for an alg that
    is not RS256 or ES256 (`none`, HMAC: a public key is not a secret to MAC with)."""
    alg = header.get("alg")
    if alg not in _JWT_ALGS:
        raise TokenError("alg %s is not accepted (RS256 or ES256 only)" % json.dumps(alg))
    if "crit" in header:
        raise TokenError("the token's header has `crit` extensions this server does not understand")
    kid = header.get("kid")
    return [key for key_id, key_alg, key in keys  # a key the JWKS names no kid for is tried too (RFC 7517: optional)
            if key_alg == alg and (kid is None or key_id is None or key_id == kid)]


def _claim_list(value):
    """A claim that is one string or a list of them (`aud`), as a list; [] for anything else."""
    return [value] if isinstance(value, str) else value if isinstance(value, list) else []


def jwt_claims(token, keys, issuer, audiences, now, skew=SIGNIN_SKEW):
    """The claims of `token` when one of `keys` signed it, `issuer` issued it, it is for one of `audiences` and
    it is valid at `now` (+/- skew); TokenError saying why not. An unknown `kid` is UnknownKey."""
    header, claims, signed, signature = jwt_parts(token)
    candidates = jwt_key(header, keys)
    if not candidates:
        raise UnknownKey("no key of the issuer's JWKS has kid %s" % json.dumps(header.get("kid")))
    check = rs256_verify if header["alg"] == "RS256" else es256_verify
    if not any(check(key, signed, signature) for key in candidates):
        raise TokenError("the signature does not verify")
    if claims.get("iss") != issuer:
        raise TokenError("issued by %s, not %s" % (json.dumps(claims.get("iss")), issuer))
    if not any(isinstance(a, str) and a.rstrip("/") in [b.rstrip("/") for b in audiences]
               for a in _claim_list(claims.get("aud"))):
        raise TokenError("its audience %s is not this server (%s)" % (json.dumps(claims.get("aud")), audiences[-1]))
    exp, nbf = claims.get("exp"), claims.get("nbf", 0)
    if type(exp) not in (int, float) or type(nbf) not in (int, float) or not abs(exp) < 1e11 > abs(nbf):
        raise TokenError("it has no numeric `exp`")  # (nor NaN, nor one past the year 5000)
    if now > exp + skew:
        raise TokenError("it expired at %s" % _iso(exp))
    if now < nbf - skew:
        raise TokenError("it is not valid before %s" % _iso(nbf))
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise TokenError("it names no subject (`sub`)")
    return claims


class Person:
    """Who a request's token names: a subject, an email, groups and scopes; `audiences` (the token's `aud`) and
    the `token` itself, which only a server of `"auth": "passthrough"` that one of them names is given."""

    def __init__(self, subject, email=None, groups=(), scopes=(), audiences=(), key=None, token=None, refusals=None,
                 sign_in=None):
        """`token`: the access token that named them; `refusals`: SignIn's {sha256 of a token: why a passthrough
        server refused it}; `sign_in`: the SignIn that let them in, which exchanges their token (`"auth":
        "exchange"`)."""
        self.subject, self.email = subject, email
        self.token, self.refusals, self.sign_in = token, refusals, sign_in
        self.key = key or subject  # whose secrets, tasks, outputs, sessions: a listed person's is static:NAME
        self.groups = [g for g in groups if isinstance(g, str)]
        self.scopes = [s for s in scopes if isinstance(s, str)]
        self.audiences = [a for a in audiences if isinstance(a, str)]

    def token_for(self, resource):
        """The person's token if it was issued for `resource` too (its `aud` names that URL, RFC 8707), else None:
        a token is never passed to a server it was not issued for (the MCP security guidance)."""
        wanted = resource.rstrip("/")
        return self.token if self.token and any(a.rstrip("/") == wanted for a in self.audiences) else None

    def refuse(self, why):
        """A passthrough server refused the token (expired or revoked there): from now on the gateway refuses it too
        (401 invalid_token, `why` its description), which makes the person's client sign them in again."""
        if self.refusals is not None and self.token:
            self.refusals[_hash(self.token, 64)] = why
            while len(self.refusals) > SIGNIN_ANSWERS:
                self.refusals.popitem(last=False)

    @classmethod
    def from_claims(cls, claims, token=None, refusals=None, sign_in=None):
        """A person from a JWT's (or an introspection's) claims: sub, email (unless email_verified is false),
        groups, scope (or scp), aud; `token` and `refusals` as for Person."""
        scopes = claims.get("scope", claims.get("scp")) or []  # Entra ID writes `scp` as a string, Okta as a list
        scopes = scopes.split() if isinstance(scopes, str) else scopes
        groups, audiences = claims.get("groups"), claims.get("aud")
        email = claims.get("email") if claims.get("email_verified") is not False else None  # not who they are
        return cls(claims["sub"], email if isinstance(email, str) else None,
                   groups if isinstance(groups, list) else [], scopes if isinstance(scopes, list) else [],
                   _claim_list(audiences),
                   token=token, refusals=refusals, sign_in=sign_in)


def admits(people, person):
    """The one rule of who may use a namespace: no `people` list admits every signed-in person; else the list
    names the person's subject or email, `group:NAME` of one of their groups, `scope:NAME` of one of their token's
    scopes, or `*`."""
    if people is None:
        return True
    names = {name for name in (person.subject, person.email)
             if name and not name.startswith(("group:", "scope:"))}  # a subject is never a group or a scope
    names |= {"*"} | {"group:" + g for g in person.groups} | {"scope:" + s for s in person.scopes}
    return any(entry in names for entry in people)


class SignIn:
    """Who a request's bearer token names: a listed person's static token, a JWT of the issuer (its JWKS found
    by discovery, fetched again on an unknown `kid` at most every SIGNIN_KID_REFETCH), or an opaque token that
    the introspection endpoint says is active. Answers are kept a minute (never past a token's expiry)."""

    def __init__(self, plan, audience, log: Log):
        self.plan, self.audience, self.log = plan, audience.rstrip("/"), log
        self.issuer, self.scopes = plan.get("issuer"), plan.get("scopes") or []
        self.keys, self.fetched, self.tried = [], None, None   # [(kid, alg, key)], when fetched, when last tried
        self.fetching = None  # the fetch in progress (one at a time)
        self.answers = collections.OrderedDict()  # sha256 of a token -> (until, Person or TokenError)
        self.refused = collections.OrderedDict()  # sha256 of a token -> why a passthrough server refused it (Person.refuse)
        self.exchanged = collections.OrderedDict()  # "sha256 of a token resource" -> (until, the token given for it)
        self.token_endpoint = None  # the issuer's, from its metadata (an exchange's)

    def metadata(self, namespace=None):
        """The RFC 9728 document of the MCP URL of `namespace` (None: the server's own)."""
        document = {"resource": self.resource(namespace), "bearer_methods_supported": ["header"]}
        if self.issuer:
            document["authorization_servers"] = [self.issuer]
        if self.scopes:
            document["scopes_supported"] = list(self.scopes)
        return document

    def resource(self, namespace=None):
        """The resource indicator of an MCP URL: the audience, and /NAMESPACE after it for a namespace's URL."""
        return self.audience + ("/" + namespace if namespace else "")

    def metadata_url(self, namespace=None):
        """Where the RFC 9728 document of `namespace`'s URL is (§3.1: the resource's path after the well-known one)."""
        return protected_resource_urls(self.resource(namespace))[0]

    async def person(self, token, namespace=None):
        """The Person `token` names for the MCP URL of `namespace` (None: the server's own); TokenError if none."""
        import hmac
        digest = _hash(token, 64)
        for name, (wanted, groups, email) in self.plan["people"].items():
            if hmac.compare_digest(digest, wanted):  # a listed person: never the provider's subject of that name
                return Person(name, email, groups, self.scopes, key=STATIC_PERSON + name)
        if not self.issuer:
            raise TokenError("it is not the token of a listed person")
        if digest in self.refused:
            raise TokenError(self.refused[digest])
        key = "%s %s" % (digest, namespace)
        kept = self.answers.get(key)
        if kept and kept[0] > time.time():
            if isinstance(kept[1], TokenError):
                raise kept[1]
            return kept[1]
        audiences = list(dict.fromkeys([self.audience, self.resource(namespace)]))
        try:
            claims = await self._claims(token, audiences)
            # the token and refusals: for a passthrough server (Person.token_for, refuse)
            answer = Person.from_claims(claims, token, self.refused, self)
            until = min(time.time() + SIGNIN_REMEMBER, claims["exp"])
            if answer.key.startswith(STATIC_PERSON):
                raise TokenError("its subject %s takes the prefix of listed people (%s)" % (
                    json.dumps(answer.key), STATIC_PERSON))
        except UnknownKey:
            raise  # not kept: the next try may find the issuer's new key, or reach it
        except TokenError as exc:
            answer, until = exc, time.time() + SIGNIN_REMEMBER
        self.answers[key] = (until, answer)
        while len(self.answers) > SIGNIN_ANSWERS:
            self.answers.popitem(last=False)
        if isinstance(answer, TokenError):
            raise answer
        return answer

    async def _claims(self, token, audiences):
        try:
            jwt_parts(token)
        except TokenError:
            if self.plan.get("introspection"):  # an opaque token
                return await self._introspect(token, audiences)
            raise TokenError("%s a JWT (three base64url parts, JSON objects), and this gateway reads no opaque "
                             "token (its signIn has no introspection)" % (
                                 "neither the token of a listed person nor" if self.plan["people"] else "not")) from None
        now = time.time()
        if (self.fetched is None or now - self.fetched > SIGNIN_JWKS_REFRESH) and not self._tried_lately(now):
            await self._fetch_keys()
        for _ in range(2):
            if not self.keys:
                raise UnknownKey("the issuer's keys (its JWKS) could not be fetched: see the server's log")
            try:
                return jwt_claims(token, self.keys, self.issuer, audiences, time.time())
            except UnknownKey:
                if self._tried_lately(time.time()):
                    raise
            await self._fetch_keys()  # the issuer may have rotated its keys: fetched again, at most every 30 s
        raise UnknownKey("no key of the issuer's JWKS has the token's kid")

    def _tried_lately(self, now):
        return self.tried is not None and now - self.tried < SIGNIN_KID_REFETCH

    async def _fetch_keys(self):
        """The issuer's keys, fetched once for every request that waits for them."""
        if self.fetching is None or self.fetching.done():
            self.tried = time.time()
            self.fetching = asyncio.get_running_loop().run_in_executor(None, self._jwks)
        keys = await asyncio.shield(self.fetching)
        if keys is not None:
            self.keys, self.fetched = keys, time.time()

    def _metadata(self):
        """The issuer's metadata (RFC 8414, OpenID discovery), blocking; OAuthError when it cannot be had."""
        for url in authorization_server_urls(self.issuer):
            status, document = _fetch_json(url)
            if status == 200 and document and document.get("issuer") == self.issuer:
                endpoint = document.get("token_endpoint")
                self.token_endpoint = endpoint if isinstance(endpoint, str) and secure_url(endpoint) else None
                return document
        raise OAuthError("no metadata of issuer %s at %s" % (self.issuer, ", ".join(
            authorization_server_urls(self.issuer))))

    def _jwks(self):
        """The issuer's signing keys, by its metadata's `jwks_uri`; None (logged) when they cannot be had, and the
        keys known so far stay."""
        try:
            document = self._metadata()
            uri = document.get("jwks_uri")
            if not isinstance(uri, str) or not secure_url(uri):
                raise OAuthError("issuer %s names no https jwks_uri" % self.issuer)
            status, jwks = _fetch_json(uri)
            if status != 200 or not jwks or not isinstance(jwks.get("keys"), list):
                raise OAuthError("%s answered %s, not a JWKS" % (uri, status))
        except OAuthError as exc:
            self.log.error("signIn: %s", exc)
            return None
        return [key for key in map(jwk_key, jwks["keys"]) if key]

    async def exchange(self, person, resource):
        """RFC 8693: an access token for `resource` (RFC 8707) that the issuer gives the gateway, as its client
        signIn.clientId, in exchange for `person`'s own, kept until shortly before it expires. TokenError when the
        issuer will not take the person's token (invalid_grant: expired or revoked; they must sign in again),
        OAuthError for anything else (unreachable, or it will not give a token for `resource`)."""
        key = "%s %s" % (_hash(person.token, 64), resource)
        kept = self.exchanged.get(key)
        if kept and kept[0] > time.time():
            return kept[1]
        loop = asyncio.get_running_loop()
        if self.token_endpoint is None:
            await loop.run_in_executor(None, self._metadata)
            if self.token_endpoint is None:
                raise OAuthError("issuer %s names no https token_endpoint in its metadata" % self.issuer)
        status, answer = await self._post_form(self.token_endpoint, {
            "grant_type": TOKEN_EXCHANGE, "subject_token": person.token, "subject_token_type": ACCESS_TOKEN_TYPE,
            "requested_token_type": ACCESS_TOKEN_TYPE, "resource": resource})
        answer = answer or {}
        given, lifetime = answer.get("access_token"), answer.get("expires_in")
        if status == 200 and isinstance(given, str) and given:
            lifetime = lifetime if type(lifetime) in (int, float) and 0 < lifetime < 1e9 else SIGNIN_REMEMBER
            self.exchanged[key] = (time.time() + max(0, lifetime - SIGNIN_EXCHANGE_MARGIN), given)
            while len(self.exchanged) > SIGNIN_ANSWERS:
                self.exchanged.popitem(last=False)
            return given
        said = "%s%s" % (answer.get("error") or "HTTP %s" % status, ": %s" % answer["error_description"]
                         if isinstance(answer.get("error_description"), str) else "")
        if answer.get("error") == "invalid_grant":
            raise TokenError("the identity provider would not exchange it (%s): sign in again" % said)
        raise OAuthError("the identity provider %s gave no token for %s in exchange for yours (%s)"
                         % (self.issuer, resource, said))

    async def _post_form(self, url, form):
        """POST `form` to one of the issuer's endpoints as the gateway's own client (signIn.clientId, clientSecret:
        HTTP Basic, RFC 6749 2.3.1), in a worker thread: (status, JSON object or None); OAuthError when unreachable."""
        import urllib.parse
        headers = {"Authorization": _basic_auth(self.plan["clientId"], self.plan["clientSecret"] or ""),
                   "Content-Type": "application/x-www-form-urlencoded"}
        body = urllib.parse.urlencode(form).encode()
        return await asyncio.get_running_loop().run_in_executor(None, _fetch_json, url, body, headers)

    async def _introspect(self, token, audiences):
        """RFC 7662: the claims of an active opaque token, checked as a JWT's are (`iss` when given; `aud` always: an
        answer without it is refused)."""
        url = self.plan["introspection"]
        try:
            status, claims = await self._post_form(url, {"token": token, "token_type_hint": "access_token"})
        except OAuthError as exc:
            status, claims = exc, None
        if status != 200 or not claims:
            self.log.error("signIn: introspection at %s answered %s", url, status)
            raise UnknownKey("the introspection endpoint could not check it now")
        if claims.get("active") is not True:
            raise TokenError("the identity provider says it is not active")
        given = claims.get("aud")
        if claims.get("iss", self.issuer) != self.issuer:
            raise TokenError("it is not for this server (issuer %s, audience %s)" % (claims.get("iss"), given))
        if given is None:  # RFC 7662 makes `aud` optional; without it the token may be another service's
            raise TokenError("the identity provider's introspection answer names no audience (`aud`): it may be a "
                             "token for another service; the provider must give it this server's URL (%s)"
                             % audiences[-1])
        if not any(isinstance(a, str) and a.rstrip("/") in audiences for a in _claim_list(given)):
            raise TokenError("it is not for this server (issuer %s, audience %s)" % (claims.get("iss"), given))
        subject = claims.get("sub", claims.get("client_id"))  # a client-credentials token: its client is the subject
        if "exp" in claims and (type(claims["exp"]) not in (int, float) or not abs(claims["exp"]) < 1e11):
            raise TokenError("the introspection endpoint gave it no numeric `exp`")
        if not isinstance(subject, str) or not subject or ("exp" in claims and claims["exp"] < time.time()):
            raise TokenError("it names no subject, or it expired")
        return dict(claims, sub=subject, exp=claims.get("exp", time.time() + SIGNIN_REMEMBER))


# --------------------------------------------------------------------------
# Streamable HTTP: the same Server at one endpoint, /mcp
# --------------------------------------------------------------------------
# Both eras on one endpoint. A 2026-07-28 request (its `_meta` names the
# version) is served statelessly by a Session of its own, with its headers
# checked against its body; the handshake era gets a session per
# `initialize` (`Mcp-Session-Id`), a GET stream for list changes, and DELETE.
# Replies are JSON, or an SSE stream when the client accepts one and the
# request may send progress or log lines first. Safe by default: loopback
# only unless a bearer token is set or people sign in, Host and Origin checked (DNS
# rebinding), header and body sizes bounded, slow clients timed out.

HTTP_PATH = "/mcp"
HTTP_MAX_HEADER = 16 << 10        # bytes of request line and headers together
HTTP_MAX_BODY = 4 << 20           # bytes of one request body
HTTP_HEADER_TIMEOUT = 30.0        # seconds a client may take to send its headers, its body, or to read
HTTP_IDLE_CONNECTION = 120.0      # seconds a keep-alive connection may wait for its next request
HTTP_MAX_CONNECTIONS = 512
HTTP_MAX_PENDING = 32             # of those, connections whose first request has not passed the checks yet
HTTP_FIRST_BYTE = 3.0             # seconds a new connection may stay silent before it may give way to another
HTTP_SLOW_HEAD = 5.0              # ... and its request head may take to arrive before it may give way (slow loris)
HTTP_BACKLOG = 1024               # connections the kernel queues before they are accepted (a burst of callers)
HTTP_DRAIN = 10.0                 # seconds a leaving instance (SIGTERM) gives running calls to finish (--http-drain)
HTTP_IDLE_SESSION = 3600.0        # seconds an unused handshake-era session is kept
HTTP_MAX_SESSIONS = 1000
HTTP_CLIENT_SESSIONS = 100        # of those, one client address's (every local process is 127.0.0.1)
HTTP_MAX_QUEUED = 1000            # notifications waiting on one SSE stream; more are dropped (replies never)
HTTP_REPLAY = 100                 # events of a stream kept to replay after Last-Event-ID (SEP-1699)
HTTP_RESUMABLE = 16               # a session's streams kept to be resumed before the response reached the client
HTTP_REPLAY_BYTES = 4 << 20       # what a session's streams keep to be read or resumed; the oldest streams go first
HTTP_REPLAY_TOTAL = 64 << 20      # the same, every session together
HTTP_RETRY_MS = 1000              # the `retry` a handshake-era client is told to wait before it resumes a stream
HTTP_TOKEN_VARIABLE = "MCPSTUDIO_HTTP_TOKEN"
_STATUS = {200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 501: "Not Implemented",
           404: "Not Found", 410: "Gone", 405: "Method Not Allowed", 406: "Not Acceptable", 408: "Request Timeout",
           413: "Payload Too Large", 415: "Unsupported Media Type", 431: "Request Header Fields Too Large",
           429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}
_STREAMED = ("tools/call", "resources/read", "prompts/get", "subscriptions/listen")
WELL_KNOWN_RESOURCE = "/.well-known/oauth-protected-resource"  # RFC 9728: where a signed-in server says how
# RFC 9112 framing, read strictly: one space between the parts of the request line,
# a token before each colon (no space), no control characters in a value, and no
# second copy of a header that decides where a request goes or how long it is.
_TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([^\x00-\x20\x7f]+) (HTTP/1\.[01])\r\n")
_HEADER_LINE = re.compile(rb"(" + _TOKEN + rb"):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*\r\n")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})(?:[ \t]*;[^\x00-\x08\x0a-\x1f\x7f]*)?\r\n")
_AUTHORITY = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::([0-9]{1,5}))?")
_ONCE = tuple(("host content-length transfer-encoding origin authorization mcp-session-id mcp-protocol-version "
               "content-type").split())


# Reading one request strictly (RFC 9112), from an asyncio StreamReader whose limit is
# HTTP_MAX_HEADER. Each refusal is an HttpError carrying the status to answer with.

async def _read_line(reader):
    """One CRLF-ended line of a request's head or chunk framing; one longer than the reader's
    limit (HTTP_MAX_HEADER) is a 431."""
    try:
        return await reader.readuntil(b"\r\n")
    except asyncio.LimitOverrunError:
        raise HttpError(431, "a request line or header line over %d bytes" % HTTP_MAX_HEADER)


async def _read_head(reader, first=b""):
    """(method, target, version, headers) of a request, read strictly (RFC 9112)."""
    line = first + await _read_line(reader)
    found = _REQUEST_LINE.fullmatch(line)
    if found is None:
        raise HttpError(400, "malformed request line (expected: METHOD /mcp HTTP/1.1)")
    method, target, version = (part.decode("latin-1") for part in found.groups())
    headers, size = {}, len(line)
    while True:
        line = await _read_line(reader)
        size += len(line)
        if size > HTTP_MAX_HEADER:
            raise HttpError(431, "headers larger than %d bytes" % HTTP_MAX_HEADER)
        if len(headers) > 100:
            raise HttpError(431, "more than 100 header fields")
        if line == b"\r\n":
            return method, target, version, headers
        found = _HEADER_LINE.fullmatch(line)
        if found is None:
            raise HttpError(400, "malformed header line (a name, a colon right after it, and a value "
                                 "without control characters; no folded lines)")
        name, value = found.group(1).decode("latin-1").lower(), found.group(2).decode("latin-1")
        if name in headers and name in _ONCE:
            raise HttpError(400, "the %s header is given twice" % name.title())
        headers[name] = (headers[name] + ", " + value) if name in headers else value


def _framing(version, headers):
    """Refuse a body whose framing is ambiguous or unsupported with a 400, 413 or 501, before
    any of it is read (request-smuggling guards, RFC 9112 6.1-6.3). Pure: no I/O."""
    coding = headers.get("transfer-encoding")
    if coding is not None:
        if "content-length" in headers:
            raise HttpError(400, "a request may not carry both Transfer-Encoding and Content-Length")
        if version != "HTTP/1.1":
            raise HttpError(400, "Transfer-Encoding needs HTTP/1.1")
        if coding.strip().lower() != "chunked":
            raise HttpError(501, "Transfer-Encoding %s is not supported (use chunked or Content-Length)"
                            % coding)
    length = headers.get("content-length")
    if length is not None and not re.fullmatch(r"[0-9]+", length):
        raise HttpError(400, "malformed Content-Length %r (digits only)" % _clip(length, 40))
    if length is not None and (len(length) > 15 or int(length) > HTTP_MAX_BODY):  # len: too many digits for int()
        raise HttpError(413, "Content-Length %s is over the limit: a request body may hold at most %d bytes"
                        % (_clip(length, 40), HTTP_MAX_BODY))


async def _read_body(reader, headers):
    """The body whose framing `_framing` accepted: chunked (trailers read and dropped), Content-Length, or none."""
    if "transfer-encoding" in headers:
        body, trailer = bytearray(), 0
        while True:
            found = _CHUNK_SIZE.fullmatch(await _read_line(reader))
            if found is None:
                raise HttpError(400, "malformed chunk size (hex digits, then CRLF)")
            length = int(found.group(1), 16)
            if length == 0:
                while True:
                    line = await _read_line(reader)
                    trailer += len(line)
                    if line == b"\r\n":
                        return bytes(body)
                    if trailer > HTTP_MAX_HEADER or _HEADER_LINE.fullmatch(line) is None:
                        raise HttpError(400, "malformed or oversized trailer")
            if len(body) + length > HTTP_MAX_BODY:
                raise HttpError(413, "a request body may hold at most %d bytes" % HTTP_MAX_BODY)
            body += await reader.readexactly(length)
            if await reader.readexactly(2) != b"\r\n":
                raise HttpError(400, "chunk data must end with CRLF")
    if "content-length" in headers:
        return await reader.readexactly(int(headers["content-length"]))
    return b""


async def _linger(reader, writer):
    """Close after an early answer without losing it (RFC 9112 9.6): stop writing, then read
    and drop what the client still sends, for two seconds. Closing with its body unread
    would make the kernel reset the connection, and the client would never see the answer."""
    loop = asyncio.get_running_loop()
    deadline, dropped = loop.time() + 2.0, 0
    try:
        if writer.can_write_eof():
            writer.write_eof()
        while dropped <= HTTP_MAX_BODY:
            chunk = await asyncio.wait_for(reader.read(65536), max(0.0, deadline - loop.time()))
            if not chunk:
                return
            dropped += len(chunk)
    except (asyncio.TimeoutError, ConnectionError, OSError):
        pass


class _Exchange:
    """Where one request's messages go: its response, and the notifications that belong to it.

    A handshake-era session's event stream has an id (`stream_id`): each event is `id: <stream>_<n>`,
    the last HTTP_REPLAY are kept, and a client that lost the stream resumes it with a GET whose
    Last-Event-ID names the last event it read (SEP-1699)."""

    count = 0
    getter = None  # the reader's wait for the next message: one reader at a time
    ended = False  # its last event (the response) was sent
    lasting = False  # a 2026-07-28 subscriptions/listen: a leaving instance waits for no reply of it

    def __init__(self, streaming, stream_id=None):
        self.streaming = streaming
        self.queue = asyncio.Queue()
        self.stream_id = stream_id
        self.sent = collections.deque(maxlen=HTTP_REPLAY)  # (n, event bytes)
        self.kept, self.born = 0, time.monotonic()  # bytes of the messages it got (see HttpServer._bound_replay)

    def event(self, data, final=False):
        """One SSE event (`data` one line), with its id when the stream has one."""
        event = b"event: message\ndata: " + data + b"\n\n"
        if self.stream_id is None:
            return event
        self.ended = final
        self.count += 1
        event = b"id: %s_%d\n" % (self.stream_id.encode(), self.count) + event
        self.sent.append((self.count, event))
        return event

    def put(self, message, final):
        self.queue.put_nowait((message, final))


class _HttpTransport:
    """A Session's transport over HTTP: responses and related notifications to their exchange;
    everything else to the session's GET stream, if one is open."""

    def ended(self, request_id):
        """The request was cancelled: its exchange ends without a response."""
        exchange = self.exchanges.pop(request_id, None)
        if exchange:
            exchange.put(None, True)

    def pause(self, request_id):
        """Close the request's event stream for now, to be resumed with Last-Event-ID (SEP-1699 polling)."""
        exchange = self.exchanges.get(request_id)
        if exchange and exchange.stream_id is not None:
            exchange.put(None, False)

    framing = NEWLINE

    def heard(self, framing):
        """Over HTTP every body is one JSON message: there is no framing to follow."""

    stream = None  # the GET stream's queue (handshake era)
    dropped = 0  # notifications dropped for a client that does not read (HTTP_MAX_QUEUED)

    def __init__(self, log, bound=None):
        self.log = log
        self.bound = bound       # HttpServer's check of what resumable streams keep (a session's transport)
        self.exchanges = {}      # request id -> _Exchange

    def _keep(self, exchange, message, final):
        exchange.put(message, final)
        if exchange.stream_id is not None:  # kept until read, then to be resumed: counted against the limits
            exchange.kept += len(json.dumps(message))
            self.bound()

    def send(self, message, framing=None, related=None):
        if self.log.file is not None:
            self.log.wire("<-", encode_message(message))
        if isinstance(message, dict) and "method" not in message:
            exchange = self.exchanges.pop(message.get("id"), None)
            if exchange:
                self._keep(exchange, message, True)
            return
        exchange = self.exchanges.get(related) if related is not None else None
        queue = exchange.queue if exchange is not None and exchange.streaming else \
            self.stream if exchange is None else None
        if queue is None:
            return
        if queue.qsize() >= HTTP_MAX_QUEUED:  # the client is not reading this stream: memory stays bounded
            self.dropped += 1
            if self.dropped in (1, 1000) or self.dropped % 100000 == 0:
                self.log.warning("an HTTP client is not reading its event stream: %d notifications dropped so far",
                                 self.dropped)
            return
        if exchange:
            self._keep(exchange, message, False)
        else:
            queue.put_nowait(message)


class _HttpSession:
    opened = 0

    def __init__(self, session_id, session, transport, client):
        self.id, self.session, self.transport, self.client = session_id, session, transport, client
        self.used = time.monotonic()
        self.streams = {}   # stream id -> the _Exchange of a POST stream not yet delivered to its end
        self.forgotten = collections.deque(maxlen=HTTP_RESUMABLE * 4)  # ids of streams dropped before their end

    def exchange(self, streaming) -> _Exchange:
        """A request's exchange; a streaming one gets an id, to be resumed by (SEP-1699)."""
        if not streaming:
            return _Exchange(False)
        self.opened += 1
        exchange = self.streams["r%d" % self.opened] = _Exchange(True, "r%d" % self.opened)
        if len(self.streams) > HTTP_RESUMABLE:  # bounded: the oldest stream nobody came back for is forgotten
            self.forget(next(iter(self.streams)))
        return exchange

    def forget(self, stream_id):
        """Drop a stream before its end: a client resuming it is told it is gone."""
        self.forgotten.append(stream_id)
        del self.streams[stream_id]


def session_to_end(sessions, client, busy: set):
    """The session to end before `client` opens another, or None while under HTTP_MAX_SESSIONS and
    HTTP_CLIENT_SESSIONS: the least recently used idle one (the client's own at its limit). One with a request,
    a task (its session in `busy`) or a GET stream never ends: when all are busy, 503."""
    mine = [e for e in sessions.values() if e.client == client]
    crowd = mine if len(mine) >= HTTP_CLIENT_SESSIONS else sessions.values() if len(sessions) >= HTTP_MAX_SESSIONS else ()
    for entry in crowd:
        if not entry.session.inflight and entry.session not in busy and entry.transport.stream is None:
            return entry
    if crowd:
        raise HttpError(503, "too many sessions from %s, each busy: end one (DELETE) or try again later" % client)
    return None


def bound_replay(entry, sessions):
    """What streams keep to be read or resumed stays within HTTP_REPLAY_BYTES for `entry`'s and
    HTTP_REPLAY_TOTAL for all `sessions`: the oldest streams are forgotten first (a resume of one gets 410)."""
    for limit, entries in ((HTTP_REPLAY_BYTES, [entry]), (HTTP_REPLAY_TOTAL, sessions.values())):
        streams = sorted((x.born, x.kept, id(e), key, e) for e in entries for key, x in e.streams.items())
        held = sum(stream[1] for stream in streams)
        for _, kept, _, key, owner in streams:
            if held <= limit:
                break
            held -= kept
            owner.forget(key)


def forwarded_client(peer, forwarded, proxies):
    """The client an HTTP request comes from: `peer` (the socket's address), or, when `peer` is one of the
    trusted balancers (`proxies`: ip_network objects), the right-most address of its X-Forwarded-For that is
    not a trusted balancer. Anyone else's X-Forwarded-For is ignored: a client cannot choose its address."""
    import ipaddress

    def trusted(address):
        try:
            ip = ipaddress.ip_address(address.strip().strip("[]"))
        except ValueError:
            return False
        return any(ip in network for network in proxies)
    if not proxies or not forwarded or not trusted(peer):
        return peer
    for hop in reversed(forwarded.split(",")):
        hop = hop.strip()
        try:
            ipaddress.ip_address(hop.strip("[]"))
        except ValueError:
            return peer  # not an address (a balancer would not write that): the balancer is the client
        if not trusted(hop):
            return hop.strip("[]")
    return peer


def parse_proxies(value):
    """`--http-trusted-proxy 10.0.0.5,10.1.0.0/16` -> ip_network objects (UsageError when one is not)."""
    import ipaddress
    networks = []
    for item in (value or "").split(","):
        if item.strip():
            try:
                networks.append(ipaddress.ip_network(item.strip(), strict=False))
            except ValueError:
                raise UsageError("--http-trusted-proxy %s: %r is not an address or network (e.g. 10.0.0.5 or "
                                 "10.1.0.0/16)" % (value, item.strip()))
    return tuple(networks)


def _host_name(value):
    """`example.com:8080` -> example.com; `[::1]:80` -> [::1]; "" when it is not host[:port]
    (userinfo such as `localhost@evil.example`, a path, a second host)."""
    found = _AUTHORITY.fullmatch(value.strip())
    return found.group(1).lower() if found else ""


def _origin_host(value):
    """The host of an Origin header (`scheme://host[:port]`, nothing more), else ""."""
    scheme, sep, rest = value.strip().partition("://")
    if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
        return ""
    return _host_name(rest)


def _bearer(headers):
    """The token of a request's `Authorization: Bearer <token>` header (the scheme in any case), or ""."""
    given = headers.get("authorization", "")
    return given[7:].strip() if given[:7].lower() == "bearer " else ""


def _good_id(message):
    request_id = message.get("id")
    return request_id is None or (isinstance(request_id, ID_TYPES) and not isinstance(request_id, bool))


def operations_report(path, server, sessions, leaving=None):
    """The HTTP response to GET /health (each MCP server's state; 503 when the server cannot serve, or the
    instance is leaving: `leaving` says so) or GET /metrics (the Prometheus text format)."""
    states = {key: upstream.state for source in server.catalog.sources
              for key, upstream in source.upstreams.items()}
    refusal = server.catalog.refusal or (McpError(INTERNAL_ERROR, leaving) if leaving else None)
    status, kind, data = (503 if refusal else 200), "application/json", json.dumps({
        "status": refusal.message if refusal else "ok", "servers": states}).encode()
    if path == "/metrics":
        status, kind, data = 200, "text/plain; version=0.0.4", server.guard.metrics.prometheus({
            "server_up": [({"server": key}, int(state == "running")) for key, state in states.items()],
            "sessions": [({}, sessions)], "tasks": [({}, len(server.tasks.tasks))]}).encode()
    return b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (
        status, _STATUS[status].encode(), kind.encode(), len(data), data)


def make_room(pending, share, most, first_byte, slow_head):
    """Past `share` pending connections (`pending`: task -> [since, sending], oldest first), the oldest that had
    their chance give way: silent past `first_byte` s, or a head still arriving past `slow_head` s (slow loris).
    A young one gives way only past `most`: one sending its request in time is never dropped."""
    now, excess = time.monotonic(), len(pending) - share
    for task, (since, sending) in list(pending.items()):
        if excess <= 0:
            break
        if now - since > (slow_head if sending else first_byte) or len(pending) > most:
            del pending[task]
            task.cancel()
            excess -= 1


def _header_text(text):
    """`text` as a quoted-string's content in a header (WWW-Authenticate's error_description): what an identity
    provider wrote may hold quotes, line breaks (a header of its own) or characters beyond Latin-1."""
    return re.sub(r'["\\]', "'", re.sub(r"[^\x20-\x7e]", "?", text))


class Drain:
    """An HttpServer's graceful leave (SIGTERM): /health answers 503 at once and new work is refused with 503 (a
    balancer sends it to another instance), while what the instance holds (its sessions, tasks and prompt rounds)
    goes on for the grace period; the requests still running then are answered with an error that says the
    instance is shutting down. The port stays open meanwhile, so health checks read the 503."""

    def __init__(self, views, name, log):
        """The HttpServers it drains (the instance's /mcp and each namespace's built so far), the instance's name
        and the Log."""
        self.views, self.name, self.log = views, name, log

    @staticmethod
    def check(http, method, params, headers, request_id):
        """Refuse (503) a request of a leaving instance unless it is for what the instance holds: one of its
        sessions (not a new one), tasks or prompt rounds."""
        if http.leaving and not ((method != "initialize" and headers.get("mcp-session-id", "").strip() in http.sessions)
                                 or http.server.holds(params)):
            raise HttpError(503, "%s: send the request again (a load balancer sends it to another instance)"
                            % http.leaving, INTERNAL_ERROR, request_id, [("Retry-After", "1")],
                            {"instance": http.instance.name, "shuttingDown": True})

    def busy(self):
        return any(any(not x.lasting for x in h.calls) or any(e.session.inflight for e in h.sessions.values())
                   or h.server.busy() for h in self.views)

    async def run(self, grace):
        name = self.name
        for http in self.views:
            http.leave("instance %s is shutting down" % name)
        self.log.info("leaving: instance %s answers /health with 503 and refuses new requests; running calls "
                      "have %g s to finish", name, grace)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and self.busy():
            await asyncio.sleep(0.1)
        error = McpError(INTERNAL_ERROR, "instance %s is shutting down: this request did not finish within its "
                         "drain of %g s; send it again (a load balancer sends it to another instance)" % (name, grace),
                         {"instance": name, "shuttingDown": True})
        for http in self.views:
            for session in [s for s in http.calls.values() if s] + [e.session for e in http.sessions.values()]:
                await session.cancel_all(reason=error)
        deadline = time.monotonic() + KILL_GRACE
        while time.monotonic() < deadline and any(http.calls for http in self.views):  # the errors are written
            await asyncio.sleep(0.05)


class NamespaceUrls:
    """The /mcp/<namespace> URLs of an HttpServer: each namespace's own Server (its filters, permissions and
    toolSearch), built at its first request by `build(name)` (the one server builder, given /mcp's Server: it
    shares its guard, client link and running servers); None: no namespace URLs."""

    def __init__(self, catalog: Catalog, views, build, serve, signs_in):
        """`catalog`: /mcp's, whose Aggregator names the namespaces; `views`: the list of /mcp's Server where each
        namespace's Aggregator goes (its Server is told of their changes too); `serve(server)`: the HttpServer of a
        namespace's Server, with /mcp's settings; `signs_in()`: whether people sign in (a stranger then learns no
        namespace's name)."""
        self.catalog, self.server_views, self.build, self.serve, self.signs_in = catalog, views, build, serve, signs_in
        self.views = {}  # namespace -> its HttpServer

    def get(self, path):
        """The HttpServer of `path`, /mcp/<namespace>; None for another path."""
        hub = next((s for s in self.catalog.sources if isinstance(s, Aggregator)), None)
        prefix, _, name = path.rpartition("/")
        if not hub or prefix != HTTP_PATH or self.build is None:
            return None
        if name not in hub.namespace.plan.namespaces:  # people signing in: a stranger learns no namespace's name
            raise HttpError(404, "no namespace %r%s" % (name, "" if self.signs_in() else " (the config's namespaces: %s)"
                                                         % ", ".join(sorted(hub.namespace.plan.namespaces))))
        if name not in self.views:
            try:
                server = self.build(name)
            except McpStudioError as exc:  # the config no longer reads as it did at the start
                raise HttpError(500, str(exc))
            server.start()
            self.views[name] = self.serve(server)
            self.server_views.append(next(s for s in server.catalog.sources if isinstance(s, Aggregator)))
        return self.views[name]

    async def close(self):
        """Their sessions' tasks end with the loop, their processes with the runner; their catalogs end here."""
        for served in self.views.values():
            await served.server.catalog.close()


class SignInGate:
    """What the MCP URLs of an HttpServer ask of a request when its config signs people in (signIn, people): the
    Person its bearer token names (the SignIn checks the token), with the scopes asked for and among the namespace's
    people; and the RFC 9728 documents at /.well-known/oauth-protected-resource[/mcp[/NAMESPACE]] that say where
    to get a token."""

    def __init__(self, sign_in: SignIn, open_paths, catalog: Catalog, namespace_url):
        """`open_paths`: the endpoints served without a token (openEndpoints); `catalog`: the Server's, whose
        Aggregator names the namespaces; `namespace_url(path)`: NamespaceUrls.get (404 for a namespace not there)."""
        self.sign_in, self.open_paths, self.catalog, self.namespace_url = sign_in, open_paths, catalog, namespace_url

    def namespace_of(self, path):
        """(the namespace an MCP URL serves or None, its people or None): /mcp serves the config's chosen one."""
        hub = next((s for s in self.catalog.sources if isinstance(s, Aggregator)), None)
        if hub is None:
            return None, None
        name = hub.namespace.name if path == HTTP_PATH else path.rpartition("/")[2]
        return name, _object(hub.namespace.plan.namespaces.get(name)).get("people")

    def metadata(self, path):
        """The RFC 9728 document at /.well-known/oauth-protected-resource[/mcp[/NAMESPACE]]."""
        rest = path[len(WELL_KNOWN_RESOURCE):].rstrip("/")
        if rest not in ("", HTTP_PATH) and not (rest.startswith(HTTP_PATH + "/") and self.namespace_url(rest)):
            raise HttpError(404, "no protected resource %s here (the MCP endpoint is %s)" % (rest, HTTP_PATH))
        return self.sign_in.metadata(rest[len(HTTP_PATH) + 1:] or None)

    async def person(self, target, headers):
        """The signed-in Person of a request (None for the metadata and open endpoints); a 401 (no token, or one
        refused) or 403 (`insufficient_scope`: scopes, or the namespace's people) otherwise."""
        path = target.split("?", 1)[0]
        if path in self.open_paths or path.startswith(WELL_KNOWN_RESOURCE):
            return None
        shown, people = self.namespace_of(path) if path.startswith(HTTP_PATH) else (None, None)  # /health, /metrics
        name = shown if path.startswith(HTTP_PATH + "/") else None
        challenge = 'Bearer resource_metadata="%s"' % self.sign_in.metadata_url(name) + (
            ', scope="%s"' % " ".join(self.sign_in.scopes) if self.sign_in.scopes else "")
        token = _bearer(headers)
        if not token:
            raise HttpError(401, "sign in first: send `Authorization: Bearer <access token>` (where to get one: %s)"
                            % self.sign_in.metadata_url(name), headers=[("WWW-Authenticate", challenge)])
        try:
            person = await self.sign_in.person(token, name)
        except TokenError as exc:
            why = _header_text(str(exc))
            raise HttpError(401, "the access token is refused: %s" % why, headers=[(
                "WWW-Authenticate", '%s, error="invalid_token", error_description="%s"' % (challenge, why))])
        missing = [scope for scope in self.sign_in.scopes if scope not in person.scopes]
        if missing or not admits(people, person):
            why = _header_text("the token lacks the scope %s" % " ".join(missing) if missing else "%s is not among the "
                               "people of namespace %s" % (person.subject, shown))
            raise HttpError(403, "not allowed: %s" % why, headers=[("WWW-Authenticate", '%s, error="insufficient_scope", '
                            'error_description="%s"' % (challenge, why))])
        return person


class HttpServer:
    """Serves a Server over Streamable HTTP at HTTP_PATH (both protocol eras)."""

    listener = None
    _sweeper = None
    # Limits (attributes, so a test can make them small). A connection is pending until a
    # request of it passes the checks (Host, Origin, token); pending ones have a share of
    # their own, so idle sockets never fill the cap (see make_room: who gives way past it).
    max_connections, max_pending = HTTP_MAX_CONNECTIONS, HTTP_MAX_PENDING
    header_timeout, idle_timeout = HTTP_HEADER_TIMEOUT, HTTP_IDLE_CONNECTION
    first_byte, slow_head = HTTP_FIRST_BYTE, HTTP_SLOW_HEAD

    def __init__(self, server, log: Log, host, port, token=None, instance=None, proxies=(), namespaced=None,
                 sign_in=None, leaving=None):
        """`namespaced(name)`: the Server of /mcp/<name> (NamespaceUrls); `sign_in`: a SignIn, when every request
        to an MCP URL brings a person's token (the config's signIn, people), else given by start() for the
        config's plan (the audience names the port it listens on); `leaving`: see Drain."""
        self.server, self.log, self.host, self.port, self.token = server, log, host, port, token
        self.sign_in, self.leaving = sign_in, leaving
        self.local = _loopback(host)
        self.caller = "token-" + _hash(token, 8) if token else "http"  # never the token
        self.instance = instance or Instance()  # names its sessions (Mcp-Session-Id) for a load balancer
        self.proxies = proxies  # the balancers' networks whose X-Forwarded-For names the real client
        self.sessions = collections.OrderedDict()  # Mcp-Session-Id -> _HttpSession, least recently used first
        self.connections = set()
        self.pending = collections.OrderedDict()  # task -> [since, sending], oldest first
        self.trusted = set()
        self.calls = {}  # the _Exchange of each reply being delivered -> its 2026-07-28 Session (None: a session's)
        self.namespaces = NamespaceUrls(server.catalog, server.views, namespaced, self._namespace_url,
                                        lambda: self.sign_in is not None)
        self.gate = self._gate(sign_in) if sign_in else None  # None: no person signs in

    async def start(self):
        """Listen on the configured address (port 0 picks a free one); with the config's signIn or people, ask
        for tokens issued for this server's URL."""
        self.listener = await asyncio.start_server(self._connection, self.host, self.port, limit=HTTP_MAX_HEADER,
                                                   backlog=HTTP_BACKLOG)
        self.port = self.listener.sockets[0].getsockname()[1]
        plan = self.server.guard.sign_in
        if plan and self.sign_in is None:
            shown = "[%s]" % self.host if ":" in self.host else self.host
            self.sign_in = SignIn(plan, plan["audience"] or "http://%s:%d%s" % (shown, self.port, HTTP_PATH), self.log)
            self.gate = self._gate(self.sign_in)
        self.sweep()

    def _namespace_url(self, server):
        """The HttpServer of a namespace's URL for its Server: this one's settings, as they are now (start() sets the
        port and the sign-in); it does not listen, and ends its idle sessions from now on."""
        server.identify(self.instance)
        served = HttpServer(server, self.log, self.host, self.port, self.token, self.instance, self.proxies,
                            sign_in=self.sign_in, leaving=self.leaving)
        served.sweep()
        return served

    def _gate(self, sign_in):
        """The SignInGate of its MCP URLs, for the people `sign_in` signs in."""
        return SignInGate(sign_in, self.server.guard.open, self.server.catalog, self.namespaces.get)

    def sweep(self):
        """End idle sessions from now on (start() does; a namespace's URL, which does not listen, is told to)."""
        self._sweeper = asyncio.ensure_future(self._sweep())

    def leave(self, reason):
        """Refuse new work from now on with `reason` (see Drain)."""
        self.leaving = reason

    async def _sweep(self):
        """End sessions nobody used for HTTP_IDLE_SESSION."""
        while True:
            await asyncio.sleep(min(60.0, HTTP_IDLE_SESSION))
            now = time.monotonic()
            for key, entry in list(self.sessions.items()):
                if now - entry.used > HTTP_IDLE_SESSION:
                    self._end(key)

    async def close(self):
        """Stop listening, the session sweeper, and every session and stream."""
        if self._sweeper:
            self._sweeper.cancel()
        if self.listener:
            self.listener.close()
        for entry in list(self.sessions.values()):
            await entry.session.cancel_all()
        await self.namespaces.close()
        for task in list(self.connections):
            task.cancel()
        if self.connections:
            await asyncio.wait(list(self.connections), timeout=2)

    # -- connections -----------------------------------------------------------------

    async def _connection(self, reader, writer):
        task = asyncio.current_task()
        self.connections.add(task)
        self.pending[task] = [time.monotonic(), False]
        make_room(self.pending, self.max_pending, self.max_connections, self.first_byte, self.slow_head)
        try:
            while True:
                if task in self.trusted:  # an idle keep-alive connection just closes
                    try:
                        first = await asyncio.wait_for(reader.readexactly(1), self.idle_timeout)
                    except (asyncio.TimeoutError, asyncio.IncompleteReadError):
                        return
                else:
                    first = b""
                started = time.monotonic()
                try:  # the request line and headers, from the first byte (or the connect): 30 s
                    if not first:
                        first = await asyncio.wait_for(reader.readexactly(1), self.header_timeout)
                        self.pending[task] = [time.monotonic(), True]  # sending: gives way only if its head is slow
                    head = await asyncio.wait_for(_read_head(reader, first),
                                                  max(0.01, self.header_timeout - (time.monotonic() - started)))
                    self._check(*head)
                    person = await self.gate.person(head[1], head[3]) if self.gate else None
                    self._admit(task)
                    body = await asyncio.wait_for(_read_body(reader, head[3]), self.header_timeout)
                except asyncio.TimeoutError:
                    await self._reply(writer, 408, self._error_body(HttpError(408, "the request took too long to arrive")),
                                      close=True)
                    return
                except asyncio.IncompleteReadError:
                    return
                except HttpError as exc:  # refused before its body was read
                    await self._reply(writer, exc.status, self._error_body(exc), exc.headers, close=True)
                    await _linger(reader, writer)
                    return
                method, target, version, headers = head
                keep = version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
                path = target.split("?", 1)[0]
                http = self if path == HTTP_PATH else self.namespaces.get(path)
                if self.gate and path.startswith(WELL_KNOWN_RESOURCE):
                    await self._reply(writer, 200, self.gate.metadata(path), close=not keep)
                elif not http:
                    writer.write(operations_report(path, self.server, len(self.sessions), self.leaving))
                    await self._drain(writer)
                else:
                    keep = await http._answer(method, headers, body, keep, version, reader, writer, person)
                if not keep:
                    return
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, asyncio.CancelledError):
            pass
        finally:
            self.connections.discard(task)
            self.pending.pop(task, None)
            self.trusted.discard(task)
            try:
                writer.close()
            except OSError:
                pass

    def _admit(self, task):
        """A request of a pending connection passed the checks: it leaves the pending share."""
        if task in self.trusted:
            return
        self.pending.pop(task, None)
        if len(self.trusted) >= self.max_connections - self.max_pending:
            raise HttpError(503, "too many connections; try again later")
        self.trusted.add(task)

    # -- writing ------------------------------------------------------------------------

    async def _drain(self, writer):
        """Wait for the client to take what was written; one that stops reading is dropped."""
        await asyncio.wait_for(writer.drain(), HTTP_HEADER_TIMEOUT)

    async def _reply(self, writer, status, body, headers=(), close=False):
        data = b"" if body is None else encode_message(body)[:-1]  # [:-1]: no newline; lone surrogates escaped
        lines = ["HTTP/1.1 %d %s" % (status, _STATUS.get(status, "Error"))]
        if body is not None:
            lines.append("Content-Type: application/json")
        lines.append("Content-Length: %d" % len(data))
        lines.extend("%s: %s" % pair for pair in headers)
        if close:
            lines.append("Connection: close")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)
        await self._drain(writer)

    def _error_body(self, exc: HttpError):
        return _error_response(exc.request_id, McpError(INVALID_REQUEST if exc.code is None else exc.code, str(exc), exc.data))

    # -- checks ----------------------------------------------------------------------------

    def _check(self, method, target, version, headers):
        """Before any body is read: the endpoint, Host and Origin (DNS rebinding), the token."""
        _framing(version, headers)
        if "host" not in headers:
            raise HttpError(400, "a Host header is required")
        host = _host_name(headers["host"])
        if not host:
            raise HttpError(400, "malformed Host header %r (expected host[:port])" % _clip(headers["host"], 60))
        if self.local and not _loopback(host):
            raise HttpError(403, "Host %s is not this machine (DNS rebinding protection)" % host)
        origin = headers.get("origin")
        if origin is not None:
            origin_host = _origin_host(origin)
            if not origin_host or not (_loopback(origin_host) if self.local else origin_host == host):
                raise HttpError(403, "Origin %s is not allowed (DNS rebinding protection)" % _clip(origin, 80))
        path = target.split("?", 1)[0]
        if self.token is not None and path not in self.server.guard.open:
            import hmac
            if not hmac.compare_digest(_bearer(headers).encode(), self.token.encode()):  # never "": no header never passes
                raise HttpError(401, "a valid `Authorization: Bearer <token>` header is required",
                                headers=[("WWW-Authenticate", 'Bearer realm="mcpstudio"')])
        if self.gate and path.startswith(WELL_KNOWN_RESOURCE):
            self.gate.metadata(path)  # a 404 for a namespace that is not there
        elif path not in (HTTP_PATH, "/health", "/metrics") and not self.namespaces.get(path):
            raise HttpError(404, "the MCP endpoint is %s" % HTTP_PATH)

    # -- requests ---------------------------------------------------------------------------

    async def _answer(self, method, headers, body, keep, version, reader, writer, person=None):
        try:
            if method == "POST":
                return await self._post(headers, body, reader, writer, keep, version, person)
            if method == "GET":
                return await self._get(headers, reader, writer, person)
            if method == "DELETE":
                return await self._delete(headers, writer, keep, person)
            raise HttpError(405, "use POST (or GET and DELETE with an Mcp-Session-Id)", headers=[("Allow", "POST, GET, DELETE")])
        except HttpError as exc:
            keep = keep and self.leaving is None  # a leaving instance's connections close: the next one goes elsewhere
            await self._reply(writer, exc.status, self._error_body(exc), exc.headers, close=not keep)
            return keep

    def _session(self, headers, person=None):
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            raise HttpError(400, "this request needs the Mcp-Session-Id header from initialize "
                                 "(or 2026-07-28 `_meta` on the request)")
        entry = self.sessions.get(session_id.strip())
        if entry and entry.session.person != (person and person.key):  # another person's: as if not there
            entry = None
        if not entry:
            why = self.instance.elsewhere(session_id.strip()) or "it ended or expired"
            raise HttpError(404, "no session %s (%s); initialize again" % (session_id.strip(), why))
        entry.used = time.monotonic()
        self.sessions.move_to_end(entry.id)
        if person is not None:
            entry.session.signed_in = person  # this request's token (it may have been refreshed)
        return entry

    async def _post(self, headers, body, reader, writer, keep, version, person=None):
        limit = self.server.guard.http_limit
        caller = person.key if person else self.caller
        wait = limit and take_token(self.server.guard.buckets, [("endpoint|" + caller,) + limit], time.monotonic())[0]
        if wait:
            raise HttpError(429, "this endpoint takes %d requests per %g s; retry in %d s" % (limit + (int(wait) + 1,)),
                            headers=[("Retry-After", str(int(wait) + 1))])
        if headers.get("content-type", "application/json").split(";")[0].strip().lower() != "application/json":
            raise HttpError(415, "send the JSON-RPC message as Content-Type: application/json")
        accept = headers.get("accept", "*/*").lower()
        if not any(kind in accept for kind in ("application/json", "text/event-stream", "*/*")):
            raise HttpError(406, "accept application/json or text/event-stream")
        try:
            message = json.loads(body)
        except BAD_JSON as exc:
            raise HttpError(400, "Parse error: %s" % exc, PARSE_ERROR)
        if isinstance(message, list):
            raise HttpError(400, "send one JSON-RPC message per request (no batches)", INVALID_REQUEST)
        if not isinstance(message, dict):  # as stdio answers it: a string or a number is no batch
            raise HttpError(400, "Invalid request: expected a JSON object", INVALID_REQUEST)
        if not _good_id(message):
            raise HttpError(400, "Invalid request: `id` must be a string or an integer", INVALID_REQUEST)
        method, request_id = message.get("method"), message.get("id")
        params = _object(message.get("params"))
        meta = params.get("_meta")
        sse = "text/event-stream" in accept and method in _STREAMED
        Drain.check(self, method, params, headers, request_id)
        # A notification or a response is accepted; a message with an id and nothing else is answered -32600.
        answerless = "id" not in message or (method is None and ("result" in message or "error" in message))
        if (method == "server/discover" or META_VERSION in _object(meta)  # a 2026-07-28 request
                or (headers.get("mcp-protocol-version", "").strip() in MODERN_VERSIONS and "mcp-session-id" not in headers)):
            if answerless:  # no client notifications exist in that era: nothing to pass on
                await self._reply(writer, 202, None, close=not keep)
                return keep
            return await self._modern(message, method, request_id, params, meta, headers, sse, reader, writer,
                                      keep, version, person)
        session_version = headers.get("mcp-protocol-version")
        if session_version is not None and session_version.strip() not in PROTOCOL_VERSIONS:
            raise HttpError(400, "unsupported MCP-Protocol-Version %s (supported: %s)"
                            % (session_version.strip(), ", ".join(PROTOCOL_VERSIONS)), INVALID_REQUEST, request_id)
        if method == "initialize" and "id" in message:  # a person's sessions count as one client's
            entry = self._new_session(("person " + person.key) if person else forwarded_client(
                (writer.get_extra_info("peername") or "?")[0], headers.get("x-forwarded-for"), self.proxies), person)
            extra = [("Mcp-Session-Id", entry.id)]
        else:
            entry = self._session(headers, person)
            extra = []
        if answerless:
            entry.session.receive(body, NEWLINE)
            await self._reply(writer, 202, None, close=not keep)
            return keep
        if request_id in entry.transport.exchanges or request_id in entry.session.inflight:
            raise HttpError(400, "Invalid request: id %s is already in use by a request in progress"
                            % json.dumps(request_id), INVALID_REQUEST, request_id)
        exchange = entry.exchange(sse)
        entry.transport.exchanges[request_id] = exchange
        entry.session.receive(body, NEWLINE)
        return await self._deliver(exchange, writer, reader, extra, keep, version, None, entry)

    def _session_pair(self, person=None, bound=None):
        """A Session of the Server (of `person`, when signed in) over a transport that routes to HTTP exchanges
        (`bound`: see _HttpTransport)."""
        transport = _HttpTransport(self.log, bound)
        session = Session(transport, self.server.dispatch, self.log, self.server.notification)
        session.caller = session.label = self.caller
        if person is not None:  # audit lines, rate limits, the cache, tasks and outputs are the person's
            session.caller = session.person = person.key  # a listed person's: static:NAME
            session.signed_in = person  # their token, for a passthrough server (Aggregator._instance)
        return session, transport

    def _new_session(self, client, person=None) -> _HttpSession:
        """A session for `client` (its address), once a limit's idle session made room (see session_to_end)."""
        idle = session_to_end(self.sessions, client, {t.owner for t in self.server.tasks.tasks.values()
                                                      if t.status not in TERMINAL})
        if idle:
            self._end(idle.id)
        session, transport = self._session_pair(person, lambda: bound_replay(entry, self.sessions))  # entry: below
        entry = _HttpSession(self.instance.new_id(), session, transport, client)
        session.label = "http-" + entry.id.rpartition(".")[2][:8]
        self.sessions[entry.id] = entry
        return entry

    def _end(self, session_id):
        entry = self.sessions.pop(session_id, None)
        if entry:
            self.server.forget(entry.session)
            asyncio.ensure_future(entry.session.cancel_all())
            if entry.transport.stream is not None:
                entry.transport.stream.put_nowait(None)

    async def _modern(self, message, method, request_id, params, meta, headers, sse, reader, writer, keep, version,
                      person=None):
        def refuse(status, code, text):
            raise HttpError(status, text, code, request_id)
        if method is None:
            refuse(400, INVALID_REQUEST, "Invalid request: no `method`")
        if not isinstance(meta, dict) or not isinstance(meta.get(META_VERSION), str) \
                or not isinstance(meta.get(META_CAPABILITIES), dict):
            refuse(400, INVALID_PARAMS, "Invalid params: a %s request needs `_meta` with `%s` and `%s`"
                   % (MODERN_VERSIONS[0], META_VERSION, META_CAPABILITIES))
        header = _header_value(headers.get("mcp-protocol-version", ""))
        if header != meta[META_VERSION]:
            refuse(400, HEADER_MISMATCH, "the MCP-Protocol-Version header (%r) must equal `_meta` %s (%r)"
                   % (header, META_VERSION, meta[META_VERSION]))
        if meta[META_VERSION] not in MODERN_VERSIONS:
            raise HttpError(400, "Unsupported protocol version", UNSUPPORTED_VERSION, request_id,
                            data={"supported": list(MODERN_VERSIONS), "requested": meta[META_VERSION]})
        if _header_value(headers.get("mcp-method", "")) != method:
            refuse(400, HEADER_MISMATCH, "the Mcp-Method header must equal the request's method (%s)" % method)
        key = _NAMED.get(method)
        if key is not None and _header_value(headers.get("mcp-name", "")) != params.get(key):
            refuse(400, HEADER_MISMATCH, "the Mcp-Name header must equal the request's %s (%s)" % (key, params.get(key)))
        if method not in self.server.modern_methods:
            refuse(404, METHOD_NOT_FOUND, "Method not found: %s" % method)
        if method == "tools/call":
            problem = param_mismatch(await self.server.catalog.tool(params["name"]), params.get("arguments"), headers)
            if problem:
                refuse(400, HEADER_MISMATCH, "%s (tool `%s`)" % (problem, params["name"]))
        session, transport = self._session_pair(person)
        exchange = _Exchange(sse)
        transport.exchanges[request_id] = exchange
        session.receive(json.dumps(message).encode(), NEWLINE)
        exchange.lasting = method == "subscriptions/listen"  # as long as the client listens: no call to wait for
        return await self._deliver(exchange, writer, reader, [], keep, version, session)

    async def _deliver(self, exchange, writer, reader, extra, keep, version, session, entry=None, after=None):
        """Write the exchange's messages as JSON or SSE. A client that goes away cancels a
        2026-07-28 request (`session` is its own); a cancelled request's stream just ends. A handshake-era
        session's stream (`entry`) starts at once, with a priming event for a 2025-11-25 client; one that
        goes away is kept to be resumed, and `after` (an event number) resumes it: what came after is sent
        again first."""
        started = finished = False
        chunked = version == "HTTP/1.1"
        self.calls[exchange] = session
        try:
            if exchange.stream_id is not None:
                if after is not None and exchange.getter is not None:
                    exchange.getter.cancel()  # a reader on a connection the client gave up: this one takes over
                self._sse_head(writer, extra, chunked, keep)
                started = True
                if after is not None:
                    replay = b"".join(event for n, event in exchange.sent if n > after)
                    if exchange.ended:  # the response was among them: nothing more will come
                        writer.write(replay)
                        finished = True
                        await self._drain(writer)
                        return False
                elif (entry.session.protocol_version or "") >= "2025-11-25":
                    replay = b"id: %s_0\nretry: %d\ndata: \n\n" % (exchange.stream_id.encode(), HTTP_RETRY_MS)
                else:
                    replay = b""
                if replay:
                    writer.write(b"%x\r\n%s\r\n" % (len(replay), replay) if chunked else replay)
                await self._drain(writer)
            while True:
                getter = exchange.getter = asyncio.ensure_future(exchange.queue.get())
                while not getter.done():
                    await asyncio.wait([getter], timeout=0.25)
                    if not getter.done() and (reader.at_eof() or writer.transport.is_closing()):
                        getter.cancel()
                        return False
                if getter.cancelled():  # another reader took the stream over (a resume)
                    return False
                message, final = getter.result()
                if message is None and not final:  # paused (see _HttpTransport.pause): resumed by a GET
                    if chunked:
                        writer.write(b"0\r\n\r\n")
                    await self._drain(writer)
                    return keep and chunked
                if message is None:  # cancelled: no response may be sent, the stream just ends
                    finished = True
                    if not exchange.streaming:
                        return False
                    if not started:
                        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                                     + (b"Transfer-Encoding: chunked\r\n\r\n" if chunked else b"Connection: close\r\n\r\n"))
                    if chunked:
                        writer.write(b"0\r\n\r\n")
                    await self._drain(writer)
                    return keep and chunked
                # 2026-07-28: a request refused for a client capability it did not declare is HTTP 400
                refused = session and final and _object(message.get("error")).get("code") == MISSING_CAPABILITY
                if not exchange.streaming or (refused and not started):
                    if final:
                        await self._reply(writer, 400 if refused else 200, message, extra, close=not keep)
                        finished = True
                        return keep
                    continue
                if not started:
                    self._sse_head(writer, extra, chunked, keep)
                    started = True
                event = exchange.event(encode_message(message)[:-1], final)
                writer.write(b"%x\r\n%s\r\n" % (len(event), event) if chunked else event)
                if final:
                    if chunked:
                        writer.write(b"0\r\n\r\n")
                    await self._drain(writer)
                    finished = True
                    return keep and chunked
                await self._drain(writer)
        finally:
            self.calls.pop(exchange, None)
            if not finished and session:  # the client left (or we stop): cancel its call
                await session.cancel_all()
            if not finished and entry and exchange.stream_id is None:  # a JSON response: no stream to resume it by
                request_id = next((i for i, e in entry.transport.exchanges.items() if e is exchange), None)
                if request_id is not None:  # cancelled as the client's notifications/cancelled would
                    entry.session.cancel(request_id, "the client closed the connection its JSON response was to come on")
            if finished and entry:  # delivered to its end: nothing left to resume
                entry.streams.pop(exchange.stream_id, None)

    @staticmethod
    def _sse_head(writer, extra, chunked, keep):
        head = ["HTTP/1.1 200 OK", "Content-Type: text/event-stream", "Cache-Control: no-cache", "X-Accel-Buffering: no"]
        head.append("Transfer-Encoding: chunked" if chunked else "Connection: close")
        head.extend("%s: %s" % pair for pair in extra)
        if chunked and not keep:
            head.append("Connection: close")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))

    async def _get(self, headers, reader, writer, person=None):
        if "mcp-session-id" not in headers:
            raise HttpError(405, "GET streams belong to a handshake-era session (Mcp-Session-Id); "
                                 "2026-07-28 clients use subscriptions/listen", headers=[("Allow", "POST")])
        entry = self._session(headers, person)
        if "text/event-stream" not in headers.get("accept", "").lower():
            raise HttpError(406, "a GET stream needs Accept: text/event-stream")
        stream, _, after = headers.get("last-event-id", "").strip().rpartition("_")
        if stream in entry.forgotten:
            raise HttpError(410, "the stream %s can no longer be resumed: what it kept was dropped (a session's streams "
                                 "keep 4 MiB at most, every session's 64 MiB); send the request again" % stream)
        if stream in entry.streams and after.isdigit():  # a POST stream the client lost: the rest of it, here
            return await self._deliver(entry.streams[stream], writer, reader, [], False, "HTTP/1.0", None, entry,
                                       int(after))
        if entry.transport.stream is not None:
            entry.transport.stream.put_nowait(None)  # a newer GET stream replaces the old one
        queue = entry.transport.stream = asyncio.Queue()
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     b"X-Accel-Buffering: no\r\nConnection: close\r\n\r\n")
        await self._drain(writer)
        try:
            while True:
                try:
                    message = await asyncio.wait_for(queue.get(), 15)
                except asyncio.TimeoutError:
                    writer.write(b": keep-alive\n\n")  # finds a vanished client, keeps proxies open
                    await self._drain(writer)
                    continue
                if message is None:
                    return False
                writer.write(b"event: message\ndata: " + json.dumps(message, separators=(",", ":")).encode() + b"\n\n")
                await self._drain(writer)
        finally:
            if entry.transport.stream is queue:
                entry.transport.stream = None

    async def _delete(self, headers, writer, keep, person=None):
        if "mcp-session-id" not in headers:
            raise HttpError(405, "DELETE ends a handshake-era session (Mcp-Session-Id)", headers=[("Allow", "POST")])
        self._end(self._session(headers, person).id)
        await self._reply(writer, 200, None, close=not keep)
        return keep


def _seconds(text):
    """A finite number of seconds, 0 or more; None when `text` is not one."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 <= value < float("inf") else None


def parse_http_address(value):
    """`8931`, `127.0.0.1:8931`, `0.0.0.0:8931` or `[::1]:8931` -> (host, port)."""
    host, _, port = value.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise UsageError("--http %s: give [HOST:]PORT, e.g. --http 8931 or --http 127.0.0.1:8931" % value)
    return host, number


def sign_in_problem(plan, host, token):
    """Why `serve --http` on `host` cannot ask for the people's tokens of `plan` (read_sign_in), or None."""
    if token:
        return "the config signs people in (signIn, people): drop --http-token and $%s" % HTTP_TOKEN_VARIABLE
    unsafe = [key for key in ("issuer", "audience", "introspection") if plan[key] and not secure_url(plan[key])]
    if unsafe:
        return "signIn.%s %s: expected https (plain http only on this machine)" % (unsafe[0], plan[unsafe[0]])
    if not plan["audience"] and not _loopback(host):
        return ("set signIn.audience to the URL clients reach this server by (https://HOST/mcp): tokens are "
                "accepted only for it")
    return None


async def serve_http(server, runner: ProcessRunner, log: Log, host, port, token, instance=None, drain=HTTP_DRAIN,
                     proxies=(), namespaced=None):
    """Serve `server` at http://host:port/mcp (and its namespaces' URLs, `namespaced(name)` their Servers)
    until SIGTERM (after a drain of `drain` seconds, see Drain; a second signal ends it at once) or SIGINT."""
    loop = asyncio.get_running_loop()
    http = HttpServer(server, log, host, port, token, instance, proxies, namespaced)
    server.identify(http.instance)
    await http.start()
    server.start()
    shown = "[%s]" % host if ":" in host else host
    plan = server.guard.sign_in
    if plan:
        log.add_secrets([plan["clientSecret"]] if plan["clientSecret"] else [])
    log.info("serving MCP at http://%s:%d%s%s", shown, http.port, HTTP_PATH,
             " (people sign in: %s, for %s)" % (", ".join(
                 ([plan["issuer"]] if plan["issuer"] else []) + (["%d listed tokens" % len(plan["people"])]
                                                                if plan["people"] else [])), http.sign_in.audience)
             if plan else " (bearer token required)" if token else " with no token: any process or user on this machine "
             "may call every tool (set $MCPSTUDIO_HTTP_TOKEN to require one)")
    stopping, leaving = loop.create_future(), []

    def stop(reason):
        if not stopping.done():
            stopping.set_result(reason)
            log.debug("stopping: %s", reason)
        elif leaving:
            leaving[0].cancel()  # a second signal: at once
    _on_stop_signals(loop, stop, server.catalog.reload_signal())
    if await stopping == "SIGTERM":
        draining = Drain([http] + list(http.namespaces.views.values()), http.instance.name, log)
        leaving.append(asyncio.ensure_future(draining.run(drain)))
        await asyncio.wait(leaving)
    await http.close()
    await server.tasks.close()
    await server.catalog.close()
    await runner.stop_all()
    runner.close_watchdog()
    return 0


def listen_problem(exc: OSError, port):
    """Why `--http` cannot listen, in words: the port in use, or one the system keeps from mcpstudio, rather than
    the socket error alone (on Windows `[Errno 10048] ... [winerror 10048]`, which names neither)."""
    import errno
    if exc.errno == errno.EADDRINUSE:  # 98 on Linux, 48 on macOS, WSAEADDRINUSE (10048) on Windows
        return ("port %d is in use: another server (another mcpstudio?) listens there; give another port, or "
                "--http 0 for a free one (%s)" % (port, exc))
    if exc.errno in (errno.EACCES, getattr(errno, "WSAEACCES", errno.EACCES)):
        return ("the system does not let mcpstudio listen on port %d: below 1024 that takes privileges, and on "
                "Windows Hyper-V, WSL or Docker may reserve it (netsh interface ipv4 show excludedportrange "
                "protocol=tcp); give another port, or --http 0 for a free one (%s)" % (port, exc))
    return str(exc)


def run_http(server, runner: ProcessRunner, log: Log, options, namespaced=None):
    """`--http [HOST:]PORT`: check the address and the token, then serve until stopped (`namespaced(name)`:
    the Server of /mcp/<name>)."""
    try:
        host, port = parse_http_address(options["http"])
    except UsageError as exc:
        _say("error: %s" % exc)
        return 2
    token = options["http_token"] or os.environ.get(HTTP_TOKEN_VARIABLE) or None
    os.environ.pop(HTTP_TOKEN_VARIABLE, None)  # tools and upstream servers never inherit the token
    runner.hide(HTTP_TOKEN_VARIABLE)           # nor get it from an env copied when the config was read
    plan = server.guard.sign_in
    problem = plan and sign_in_problem(plan, host, token)
    if problem:
        _say("error: --http %s: %s" % (options["http"], problem))
        return 2
    if token is None and not _loopback(host) and not plan:
        _say("error: --http %s listens beyond this machine: set a bearer token with "
             "--http-token or $%s (or bind 127.0.0.1)" % (options["http"], HTTP_TOKEN_VARIABLE))
        return 2
    if token:
        log.add_secrets([token])
    try:
        name = options["http_instance"] or os.environ.get(INSTANCE_VARIABLE) or None
        if name is not None and not INSTANCE_NAME.fullmatch(name):
            raise UsageError("--http-instance %s: use 1 to 40 letters, digits, - or _ (it starts every task and "
                             "session id)" % name)
        drain = HTTP_DRAIN if options["http_drain"] is None else _seconds(options["http_drain"])
        if drain is None:
            raise UsageError("--http-drain %s: give the seconds running calls may take to finish (0: none)"
                             % options["http_drain"])
        proxies = parse_proxies(options["http_trusted_proxy"])
    except UsageError as exc:
        _say("error: %s" % exc)
        return 2
    _claim_stdout()
    try:
        return asyncio.run(serve_http(server, runner, log, host, port, token, Instance(name), drain, proxies,
                                      namespaced))
    except OSError as exc:
        _say("error: --http %s: %s" % (options["http"], listen_problem(exc, port)))
        return 1
    except KeyboardInterrupt:
        asyncio.run(runner.stop_all())
        return 0
    finally:
        log.close()


# --------------------------------------------------------------------------
# Command line: options, usage, and the server they build
# --------------------------------------------------------------------------

_Option = collections.namedtuple("_Option", ("names", "dest", "metavar", "kind", "help"))


def _options(table):
    """The _Options of a table of them as --help shows them (OPTION_TABLE); a dest is the long name's words."""
    options = []
    for entry in re.split(r"\n(?=-)", table.strip()):
        shown, kind, help = re.split(r"  +", entry, maxsplit=2)
        words = shown.replace(",", "").split()
        names = [word for word in words if word.startswith("-")]
        options.append(_Option(names, names[-1][2:].replace("-", "_"), None if words[-1] in names else words[-1], kind,
                               " ".join(help.split())))
    return options


def _positive(text, option, kind=float):
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not (0 < value < float("inf")):
        raise UsageError("%s needs a positive %s, not %r" % (option, "whole number" if kind is int else "number", text))
    return value


# Every option as --help shows it: its names and metavar, its kind ("flag", "value" or "append": repeatable),
# and its help, which goes on over indented lines (%(NAME)s: a constant of the module's).
OPTION_TABLE = """
-h, --help                       flag    show this help and exit
--version                        flag    print the version and exit
--name NAME                      value   tool name (default: the command's base name)
--description TEXT               value   tool description (default: the template)
--read-only                      flag    annotate the tool readOnlyHint: true
--destructive                    flag    annotate the tool destructiveHint: true
--idempotent                     flag    annotate the tool idempotentHint: true
--open-world                     flag    annotate the tool openWorldHint: true
--env KEY=VALUE                  append  set a variable for the command (repeatable; values of names like *_TOKEN, *_KEY masked
                                         in logs)
--cwd DIR                        value   folder the command runs in (default: the current one)
--timeout SECONDS                value   stop a call after this long (default: %(DEFAULT_TIMEOUT)g)
--max-output BYTES               value   keep at most this much of stdout and of stderr (default: %(DEFAULT_MAX_OUTPUT)d)
--max-text CHARS                 value   characters of output a result shows; past it the head and tail, the whole kept as a
                                         resource (default: %(DEFAULT_MAX_TEXT)d)
--max-concurrency N              value   commands running at once; more calls wait (default: %(DEFAULT_MAX_CONCURRENCY)d)
--max-name-length N              value   longest tool name given to clients (default: %(DEFAULT_MAX_NAME_LENGTH)d)
--task-support MODE              value   run calls as MCP tasks: optional (the default), required or forbidden
--ok-exit CODES                  value   exit codes that mean success, e.g. 0,1 for grep (1: no match; default: 0)
--stdin TEXT                     value   feed the command this text template on stdin, e.g.
                                         --stdin '{json}' jq --arg k '{k}' '.[$k]'
--allow-dash-values              flag    let values start an argument with '-' (off: refused as option injection)
--config FILE                    value   serve the tools, resources and script folders of a JSON config file (see `serve`)
--url URL                        value   serve the MCP server at URL over stdio, signing in with OAuth when it asks (a bridge,
                                         as mcp-remote)
--protocol-version VERSION       value   with --url: speak this MCP revision (2026-07-28, 2025-11-25, ...) instead of trying
                                         initialize first
--root-directory DIR             value   serve every executable script under DIR as a tool (script mode)
--include GLOB                   append  script mode: only run scripts whose path under DIR matches (repeatable)
--exclude GLOB                   append  script mode: skip scripts whose path matches (repeatable)
--separator SEP                  value   joins folder and script names in tool names (default: __, so math/add is math__add)
--skills DIR                     append  serve the Agent Skills (folders with a SKILL.md) under DIR (repeatable; alone or beside
                                         a mode)
--no-skill-prompts               flag    do not also offer each skill as a prompt (for clients without the skills extension)
--help-timeout SECONDS           value   script mode: how long a script's --help or --state may take (default: %(HELP_TIMEOUT)g)
--rescan SECONDS                 value   script mode: look for changed scripts this often, 0 for never (default:
                                         %(RESCAN_INTERVAL)g)
--debug                          flag    write debug lines to stderr
--log-level LEVEL                value   what goes to stderr: debug (as --debug), info (the default), warn or error
--log FILE                       value   append debug lines and every protocol message to FILE
--namespace NAME                 value   serve this namespace of the config's MCP servers (default: the config's
                                         defaultNamespace)
--no-manager-tools               flag    hide the mcpstudio__servers_list, ... tools that manage the config's MCP servers
--eager                          flag    start every configured MCP server right after initialize
--check                          flag    status: start each server, list its tools and stop it
--tool-search MODE               value   with MCP servers: list two tools that search and call the others: on, off or auto (the
                                         default: past toolSearchThreshold tools, except for Claude Code)
--stdio                          flag    serve on stdin/stdout (the default; accepted for other tools' configs)
--http [HOST:]PORT               value   serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults to
                                         127.0.0.1)
--http-token TOKEN               value   require Authorization: Bearer TOKEN (default: $MCPSTUDIO_HTTP_TOKEN; required off
                                         loopback)
--audit FILE                     value   append one JSON line per tool call to FILE (secrets masked)
--rate-limit CALLS/SECONDS       value   each client may make CALLS tool calls at once, then CALLS per SECONDS (e.g. 10/60)
--http-rate-limit CALLS/SECONDS  value   --http: requests to /mcp beyond CALLS at once, then CALLS per SECONDS, get 429 and
                                         Retry-After
--http-instance NAME             value   --http: this instance's name, the first part of its task and session ids, for a load
                                         balancer to route by (default: $%(INSTANCE_VARIABLE)s, else random at each start)
--http-drain SECONDS             value   --http: on SIGTERM, /health is 503 and new requests are refused while running calls get
                                         SECONDS to finish (default: %(HTTP_DRAIN)g)
--http-trusted-proxy ADDRESSES   value   --http: load balancers (addresses or networks, comma-separated) whose X-Forwarded-For
                                         names the client
""" % globals()
OPTIONS = _options(OPTION_TABLE)
_OPTIONS_BY_NAME = {name: option for option in OPTIONS for name in option.names}

USAGE = """\
usage: mcpstudio [OPTIONS] [--] COMMAND [TEMPLATE...]
       mcpstudio [OPTIONS] --root-directory DIR
       mcpstudio [OPTIONS] --skills DIR
       mcpstudio [OPTIONS] serve|check [--config FILE] [--namespace NAME]
       mcpstudio status [--config FILE] [--namespace NAME] [--check]
       mcpstudio init NAME --command CMD [--description TEXT] [-o FILE] [--force]
       mcpstudio login|logout NAME|URL [--config FILE]
       mcpstudio secrets set|remove|list [NAME] --person SUBJECT
       mcpstudio tui [--config FILE] [--namespace NAME]
       mcpstudio inspect|call|install|import|add|remove|enable|disable|list|namespace|zipapp ... (CMD --help)"""

# Each subcommand's own --help, as it prints: an entry starts at its "usage: mcpstudio NAME" line
# (%(NAME)s: a constant of the module's).
SUBCOMMAND_HELP = {text.split()[2]: text.strip() for text in re.split(r"\n(?=usage: )", """\
usage: mcpstudio serve [--config FILE] [--namespace NAME] [--http [HOST:]PORT] [OPTIONS]

Serve a config file's tools, resources, script folders and MCP servers (default config:
$XDG_CONFIG_HOME/mcpstudio/config.json). The options of `mcpstudio --help` apply.

usage: mcpstudio check [--config FILE] [--namespace NAME] [--skills DIR]

Validate a config file and show each tool's parameters and an example command; nothing runs.
With --skills DIR (no config needed): which skills under DIR are served, which not and why.

usage: mcpstudio status [--config FILE] [--namespace NAME] [--check]

The config's MCP servers, their cached tool counts and namespaces; --check starts
each server of the active namespace, lists its tools and stops it.

usage: mcpstudio init NAME --command CMD [--description TEXT] [-o FILE] [--force]

Write a commented starter config (NAME.json) for the program CMD.

usage: mcpstudio inspect [--json] [--search QUERY [--limit N]] [MODE ARGS...]
       mcpstudio inspect [--json] -- SERVER COMMAND ARGS...
       mcpstudio inspect [--json] --url URL

Start the mode as a client would and show the tools (with their parameters), resources
and prompts it serves; --json prints them as JSON. MODE ARGS are mcpstudio's own
arguments (a template, --root-directory DIR, serve --config FILE, --url URL; none: the
default config); after -- comes any MCP server's command. A config with MCP servers shows
what a client in tool search mode sees (toolSearch); --search QUERY shows only the tools
a search finds, best first: as many as a model gets by default (%(SEARCH_LIMIT)d), or --limit N (up
to %(SEARCH_MAX)d).

examples:
  mcpstudio inspect git log '[--oneline]' -n '{limit}'
  mcpstudio inspect --json serve --config tools.json
  mcpstudio inspect -- npx -y @modelcontextprotocol/server-everything

usage: mcpstudio call TOOL [KEY=VALUE ...] [--json ARGS] [--raw] [--yes] [MODE ARGS...]
       mcpstudio call TOOL [KEY=VALUE ...] [--json ARGS] -- SERVER COMMAND ARGS...
       mcpstudio call TOOL [KEY=VALUE ...] --url URL

Call one tool through the real server, as a client would, and print its text (and
structured content); exit 1 when the result is an error. KEY=VALUE values are text for
string parameters and JSON otherwise (n=3, flag=true); an array parameter takes
KEY=VALUE more than once. KEY=@PATH gives a file parameter the file at PATH (as curl
does: photo=@cat.png); for any other parameter @ is text. --json gives all arguments
as one JSON object; --raw prints the whole result as JSON. When the server asks a
question (elicitation), call asks it on the terminal; --yes accepts the question's
defaults instead (no terminal needed).
--url reaches a remote server, signing in with OAuth in the browser when it asks.

examples:
  mcpstudio call echo message=hello echo '{message}'
  mcpstudio call search query=mcp --url https://mcp.example.com/mcp
  mcpstudio call git limit=3 git log '[--oneline]' -n '{limit}'
  mcpstudio call get-sum --json '{"a": 1, "b": 2}' -- npx -y @modelcontextprotocol/server-everything

usage: mcpstudio login NAME|URL [--config FILE]

Sign in to a remote MCP server with OAuth now, in the browser ($BROWSER names another
program): NAME is a URL server of the config (its "oauth" block applies), or give the URL.
The tokens are kept, readable by you only, in the oauth folder beside the default config
($XDG_CONFIG_HOME/mcpstudio/oauth), and refreshed when they expire; `serve` uses them.
`status` shows each server's sign-in.

usage: mcpstudio logout NAME|URL [--config FILE]

Forget a server's tokens and client registration (the next use signs in again).

usage: mcpstudio secrets set|remove NAME --person SUBJECT
       mcpstudio secrets list --person SUBJECT

A signed-in person's own secrets (serve --http with signIn or people): `${person.NAME}` in
the env, headers or args of a server with "isolation": "user" is SUBJECT's NAME when
that person's own process starts. `set` reads the value from stdin (asks on a terminal).
They are kept in people-secrets.json beside the default config, mode 0600; `list` shows
names only. SUBJECT is the identity provider's `sub`; a person the config's `people` lists
is static:NAME (never the same person as a subject NAME).

usage: mcpstudio install --client CLIENT [--as NAME] [--write] [--file PATH] [MODE ARGS...]

Print the entry that makes CLIENT (claude-code, claude-desktop, cursor, vscode, codex) run
this mcpstudio invocation: this interpreter and this module by absolute path, paths in
the options made absolute. --write merges it into the client's user config file (or
--file PATH) atomically, keeping a .bak copy and every other entry. With --http in MODE
ARGS the entry is the URL (start the server yourself). A mode the server would refuse is
an error (exit 2): nothing is printed or written.

examples:
  mcpstudio install --client claude-code echo '{message}'
  mcpstudio install --client cursor --write --root-directory ./scripts

usage: mcpstudio import FILE|--from CLIENT [--config FILE] [--write]

Copy the MCP servers of a client's config (CLIENT: claude-desktop, claude-code, cursor,
vscode; or any FILE with mcpServers/servers) into mcpstudio's config (--config, default
$XDG_CONFIG_HOME/mcpstudio/config.json), keeping env, cwd, disabled and ${VAR}. Says what
it skips and why. A dry run unless --write.

usage: mcpstudio add NAME [--config FILE] [--env KEY=VALUE]... [--cwd DIR] [--disabled] -- COMMAND ARGS...
       mcpstudio add NAME [--config FILE] --url URL [--header KEY=VALUE]...

Add (or replace) an MCP server in the config; the file is written atomically (mode 0600).

usage: mcpstudio remove NAME [--config FILE]

Remove an MCP server from the config, its namespaces and toolPermissions.

usage: mcpstudio list [--config FILE] [--json]

The config's MCP servers, how each starts, and their namespaces (`status` adds tool counts).

usage: mcpstudio namespace add NS [SERVER...] [--config FILE]
       mcpstudio namespace remove NS | assign NS SERVER... | default NS
       mcpstudio namespace allow|deny NS SERVER TOOL

Group the config's servers: a client serves one namespace (--namespace NS, else the default);
allow and deny set one tool's permission in a namespace (toolPermissions).

usage: mcpstudio enable NAME [--config FILE]

Let serve start the server again (drops `disabled`).

usage: mcpstudio disable NAME [--config FILE]

Keep the server in the config, unstarted (`disabled: true`).

usage: mcpstudio tui [--config FILE] [--namespace NAME]

See and manage the config's MCP servers in the terminal: start one to test it, read its
log, call its tools, enable, add, remove, group into namespaces. ? shows every key.

usage: mcpstudio zipapp OUT.pyz

Build the one-file app: run it with any Python 3.8+ (python3 OUT.pyz ...). It carries
bytecode for the Python that built it and the source for the others.
""" % globals())}


def help_text():
    lines = [
        USAGE, "",
        "Serve one command template as an MCP tool over stdio, every script in a",
        "folder (--root-directory), or the tools of a config file (serve --config).",
        "Options go before the command; everything from the command on is the",
        "template. A command named like a subcommand is reached with --.", "",
        "subcommands:",
        "  serve [--config FILE]   serve a config file (default %s)" % default_config_path(),
        "  check [--config FILE]   validate a config file and show what it serves",
        "  status [--config FILE] [--check]",
        "                          the config's MCP servers, cached tool counts, namespaces;",
        "                          --check starts each server, lists it and stops it",
        "  init NAME --command CMD [--description TEXT] [-o FILE] [--force]",
        "                          write a commented starter config",
        "  inspect [--json] [MODE ARGS...]",
        "                          the tools, resources and prompts a mode serves",
        "  call TOOL [KEY=VALUE...] [--json ARGS] [MODE ARGS...]",
        "                          call one tool as a client would; exit 1 on an error result",
        "  install --client CLIENT [--write] [MODE ARGS...]",
        "                          the entry for claude-code, claude-desktop, cursor, vscode",
        "                          or codex; --write merges it into that client's file",
        "  import FILE|--from CLIENT [--write]",
        "                          copy a client's MCP servers into the config",
        "  add NAME -- CMD ARGS..., remove NAME, list, namespace add|remove|assign|default",
        "                          edit the config's MCP servers",
        "  zipapp OUT.pyz          build the one-file app",
        "  Each has its own --help. MODE ARGS: a template, --root-directory DIR or",
        "  serve --config FILE; inspect and call also take -- SERVER COMMAND.", "",
        "template fields:",
        "  {name}        required string      [name]      optional string",
        "  {name...}     required array       [name...]   optional array",
        "  [--flag]      optional boolean     {name # a description}",
        "", "options:",
    ]
    for option in OPTIONS:
        names = ", ".join(option.names) + (" " + option.metavar if option.metavar else "")
        lines.append("  %-26s %s" % (names, option.help))
    lines += ["", "examples:",
              '  mcpstudio echo "{message}"',
              '  mcpstudio --read-only git -C "{repo}" log "[--oneline]" -n "{limit}" -- "{path # file to inspect}"',
              "  mcpstudio --root-directory ./scripts",
              "", "Manual: docs/README.md beside this file; every option: docs/cli.md; config keys: docs/config.md."]
    return "\n".join(lines)


def parse_command_line(argv, options=None):
    """Split argv into (options dict, template words). Options stop at the command."""
    if options is None:
        options = {o.dest: ([] if o.kind == "append" else None) for o in OPTIONS}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        name, eq, inline = arg.partition("=")
        option = _OPTIONS_BY_NAME.get(name)
        if option is None:
            close = [n for n in _OPTIONS_BY_NAME if n.startswith(name[:4])] if len(name) > 3 else []
            hint = " (did you mean %s?)" % " or ".join(close) if close else ""
            raise UsageError("unknown option %s%s; put options before the command, or use -- "
                             "before a command that starts with '-'" % (name, hint))
        if option.kind == "flag":
            if eq:
                raise UsageError("%s takes no value" % name)
            options[option.dest] = True
        else:
            if not eq:
                i += 1
                if i >= len(argv):
                    raise UsageError("%s needs a value (%s)" % (name, option.metavar))
                inline = argv[i]
            if option.kind == "append":
                options[option.dest].append(inline)
            else:
                options[option.dest] = inline
        i += 1
    return options, argv[i:]


def _exit_codes(text):
    """`--ok-exit 0,1` as (0, 1); (0,) when not given."""
    if text is None:
        return (0,)
    try:
        codes = tuple(int(code) for code in text.split(","))
    except ValueError:
        codes = ()
    if not codes or not all(0 <= code <= 255 for code in codes):
        raise UsageError("--ok-exit needs exit codes 0-255 separated by commas, e.g. --ok-exit 0,1, not %r" % text)
    return codes


def url_config(url, version):
    """The config `--url URL` serves: that one server, its tools unprefixed, signing in with the browser."""
    import urllib.parse
    entry = {"url": url, "prefix": "", "startupTimeout": OAUTH_CALLBACK_WAIT + 30, "oauth": {"browser": True}}
    if version:
        entry["protocolVersion"] = version
    return {"mcpServers": {urllib.parse.urlsplit(url).netloc.rpartition("@")[2]: entry}}  # never a password


def _folder_option(option, given):
    """The folder `option` names (~ expanded); a UsageError when there is none."""
    folder = os.path.expanduser(given)
    if os.path.isfile(folder):  # a SKILL.md or a script given for its folder
        raise UsageError("%s %s: a file, not a folder: give the folder that holds it (%s)"
                         % (option, given, os.path.dirname(os.path.abspath(folder))))
    if not os.path.isdir(folder):
        raise UsageError("%s %s: no such folder (looked for %s; client configs need absolute paths)"
                         % (option, given, os.path.abspath(folder)))
    return folder


def _absolute(path):
    return os.path.abspath(os.path.expanduser(path))


def _key_values(words, option):
    """KEY=VALUE words as a dict; `option` names them in the error."""
    pairs = {}
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or not key:
            raise UsageError("%s needs KEY=VALUE, not %r" % (option, word))
        pairs[key] = value
    return pairs


def _build_server(options, words, log: Log, config, runner=None, primary: Server | None = None, publish=False):
    """The command line's sources (a template, a script folder, a config file) behind one Server: `serve`'s,
    `check`'s, and each /mcp/<namespace> URL's (`primary`: the Server of /mcp, whose guard it shares, and whose
    Aggregator's client link and running servers its own shares). `publish`: its metrics are written for
    `status` and the TUI (RunningStats)."""
    env = dict(os.environ, **_key_values(options["env"], "--env")) if options["env"] else None
    cwd = None if options["cwd"] is None else os.path.abspath(_folder_option("--cwd", options["cwd"]))

    def number(dest, default, kind=float):
        """The option's positive number, or `default` when it is not given."""
        return _positive(options[dest], "--" + dest.replace("_", "-"), kind) if options[dest] else default
    cli_timeout = number("timeout", None)
    settings = RunSettings(
        env=env, cwd=cwd, timeout=cli_timeout or DEFAULT_TIMEOUT,
        max_output=number("max_output", DEFAULT_MAX_OUTPUT, int),
        max_concurrency=number("max_concurrency", DEFAULT_MAX_CONCURRENCY, int),
        allow_dash_values=bool(options["allow_dash_values"]), task_support=options["task_support"] or "optional",
        max_text=number("max_text", DEFAULT_MAX_TEXT, int), outputs=OutputStore())
    sweep_call_folders()
    if settings.task_support not in TASK_SUPPORT:
        raise UsageError("--task-support %s: expected one of %s" % (settings.task_support, ", ".join(TASK_SUPPORT)))
    max_name = number("max_name_length", DEFAULT_MAX_NAME_LENGTH, int)
    if max_name < 16:
        raise UsageError("--max-name-length %d is too short: names need at least 16 characters "
                         "(room for a 7-character hash suffix)" % max_name)
    annotations = {hint: True for dest, hint in (
        ("read_only", "readOnlyHint"), ("destructive", "destructiveHint"),
        ("idempotent", "idempotentHint"), ("open_world", "openWorldHint")) if options[dest]}
    script_options = {}
    if options["rescan"] is not None:
        script_options["rescan"] = 0.0 if options["rescan"] in ("0", "0.0") else _positive(options["rescan"], "--rescan")
    if options["help_timeout"]:
        script_options["help_timeout"] = number("help_timeout", None)
    runner = runner or ProcessRunner(log)
    metrics = primary.guard.metrics if primary else CallMetrics()  # the guard's counters (servers_list shows them)
    sources, titles, instructions, rules, audit, opened, search, sign_in = [], [], None, {}, None, (), None, None
    if options["url"] is not None:
        if config is not None:
            raise UsageError("--url %s: give --url or --config, not both (a config's server takes \"url\")"
                             % options["url"])
        if not re.match(r"https?://[^/?#]+", options["url"]):
            raise UsageError("--url needs an http:// or https:// URL, not %r" % options["url"])
        options["no_manager_tools"] = True
    elif options["protocol_version"] is not None:
        raise UsageError("--protocol-version goes with --url (a config's server takes \"protocolVersion\")")
    if config is not None or options["url"] is not None:

        def load():
            loader = ConfigLoader(config) if config is not None else ConfigLoader("--url", data=url_config(options["url"], options["protocol_version"]))
            found, info = loader.load(runner, log, settings.derive(timeout=cli_timeout), options["separator"],
                                      script_options, skill_prompts=not options["no_skill_prompts"])
            log.add_secrets(loader.secrets)
            return loader, found, info
        loader, found, info = load()
        if info["upstream"] is not None:  # MCP servers: one Aggregator over them and the file's own sources
            along = primary and next(s for s in primary.catalog.sources if isinstance(s, Aggregator))
            hub = aggregator_for(found, info, load, config and loader.path, runner, log, options, script_options,
                                 admits, metrics, along)
            found = [hub]
            # toolSearch: --tool-search, else the namespace's, else the file's
            mode = (options["tool_search"] or _object(hub.namespace.plan.namespaces.get(hub.namespace.name)).get("tool_search")
                    or info["tool_search"][0] or "auto")
            if mode not in TOOL_SEARCH_MODES:
                raise UsageError("--tool-search %s: expected one of %s" % (mode, ", ".join(TOOL_SEARCH_MODES)))
            search = (mode,) + info["tool_search"][1:] + (info["separator"],)
        elif options["namespace"]:
            raise UsageError("--namespace %s: %s configures no MCP servers (`mcpServers`) and no namespaces"
                             % (options["namespace"], loader.path))
        sources.extend(found)
        rules, audit, opened = info["guard"]
        sign_in = info["sign_in"]
        titles.append(info["name"] or os.path.basename(loader.path))
        instructions = info["instructions"] or info["description"]
    if words:
        template = Template(words)
        program = template.words[0]
        missing = all(isinstance(piece, str) for piece in program) and program_not_found("".join(program), env)
        if missing:  # a typo (`gti log`) would pass every check and fail at each call
            log.warning("%s; each call will fail so", missing)
        if unclosed_warning(words):
            log.warning("the template: %s", unclosed_warning(words))
        misplaced = [word for word in words[1:] if word.startswith("--") and word.partition("=")[0] in _OPTIONS_BY_NAME]
        if misplaced:  # parse_command_line stops at the command: later words are the template's
            log.warning("%s stand%s after the command `%s`, so %s words of the template, passed to it at every "
                        "call; mcpstudio's options go before the command", ", ".join("`%s`" % w for w in misplaced),
                        "s" if len(misplaced) == 1 else "", template.command_name(),
                        "it is one of the" if len(misplaced) == 1 else "they are")
        name = safe_name(options["name"] or template.command_name(), max_name)  # dashes kept, as in every mode
        schema, stdin = template.input_schema(), None
        if options["stdin"] is not None:  # its fields join the tool's parameters
            stdin = CommandTemplate(options["stdin"], text=True)
            field = next(iter(stdin.occurrences()), None)
            if field is not None and template.stdin_code:
                raise UsageError("--stdin: `%s` would be code or an option: %s. Give the program as a file or "
                                 "in the template, and pass values as arguments" % (field.name, template.stdin_code))
            extra = stdin.input_schema()
            schema["properties"].update(extra["properties"])
            schema["required"] = list(dict.fromkeys(schema.get("required", []) + extra.get("required", [])))
            if not schema["required"]:
                del schema["required"]
        description = options["description"] or (
            "Run `%s` with `%s` on stdin." % (template.display(), options["stdin"]) if stdin else None)
        sources.append(TemplateTools([CommandTool(ToolSpec(
            name, template, description=description, annotations=annotations, schema=schema, stdin=stdin,
            ok_exit=_exit_codes(options["ok_exit"]), output_folder=template.folder(),
            files=[key for words in (template, stdin) if words for key, field in words.fields.items() if field.kind == "file"]),
            runner, settings)]))
        titles.append(template.command_name())
    if options["root_directory"]:
        root = _folder_option("--root-directory", options["root_directory"])
        separator = options["separator"] or "__"
        if separator_problem(separator):
            raise UsageError("--separator %r: %s" % (separator, separator_problem(separator)))
        sources.append(ScriptDirectory(root, runner, settings, log, include=options["include"],
                                       exclude=options["exclude"], separator=separator, **script_options))
        titles.append(os.path.basename(os.path.realpath(root)) + "/")
    if options["skills"]:
        sources.append(SkillFolders([_folder_option("--skills", root) for root in options["skills"]], log,
                                    prompts=not options["no_skill_prompts"]))
        titles.append("skills")
    limits = {}
    for option in ("rate_limit", "http_rate_limit"):
        calls, _, seconds = (options[option] or "").partition("/")
        if options[option]:
            flag = "--" + option.replace("_", "-")
            limits[option] = (_positive(calls, flag + " CALLS", int), _positive(seconds or "?", flag + " CALLS/SECONDS"),
                              "session")
    if options["audit"]:
        audit = AuditLog(_absolute(options["audit"]))
    if primary:  # one audit file, one rate limit per caller, one /metrics for every URL
        guard = primary.guard
    else:
        stats = RunningStats(metrics, config, "http" if options["http"] else "stdio") if publish else None
        guard = Guard(log, dict(rules, rateLimit=limits["rate_limit"]) if limits.get("rate_limit") else rules, audit,
                      metrics, stats, limits.get("http_rate_limit", ())[:2], opened, sign_in)
    server = Server(Catalog([settings.outputs] + sources, max_name), log, title="mcpstudio: %s" % ", ".join(titles),
                    instructions=instructions, guard=guard, search=search)
    return server, runner


def _prog():
    """How the user ran us, for the commands we suggest."""
    return "mcpstudio" if not sys.argv[0].endswith((".py", ".pyz")) else _PYTHON + " " + _argv_text([sys.argv[0]])


# --------------------------------------------------------------------------
# Tools for people: inspect, call, install, import, edit a config, zipapp
# --------------------------------------------------------------------------
# Each subcommand is one plain function taking its words and returning an exit
# code. `inspect` and `call` start the mode as a child (`python3 mcpstudio.py
# MODE ARGS...`, or an upstream server's own command after `--`) and speak MCP
# to it over stdio, so what they show is exactly what a client gets.

CLIENT_TIMEOUT = 60.0   # seconds `inspect` and `call` wait for the handshake and a listing; a call waits


                        # for its answer (the mode's own --timeout ends it; Ctrl+C always does)


class StdioClient:
    """A small synchronous MCP client of a child process, for `inspect` and `call`."""

    closed = False
    next_id = 0

    def __init__(self, argv, timeout=CLIENT_TIMEOUT, ask=None, own=False):
        self.argv = argv
        self.own = own  # the child is mcpstudio itself: its refusal (exit 2) has said why on stderr
        self.timeout = timeout
        self.ask = ask  # answers elicitation/create (params -> result); None: the capability is not declared
        self.lock = threading.Condition()
        self.responses = {}
        program = _resolve_program(argv, None)
        problem = exec_problem(program)
        if problem is not None:
            raise UsageError("cannot start %s: %s" % (_argv_text(argv), problem))
        try:
            env = dict(os.environ)
            env.setdefault("MCPSTUDIO_LIST_WAIT", "60")  # one listing, as complete as the servers make it
            self.process = subprocess.Popen(program, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                            **_SPAWN_OPTIONS)
        except OSError as exc:
            raise UsageError("cannot start %s: %s" % (_argv_text(argv), exc.strerror or exc))
        self.reader = threading.Thread(target=self._read, name="mcpstudio-client", daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                _say("the server wrote a line that is not JSON: %r" % line[:200])
                continue
            if not isinstance(message, dict):
                continue
            method = message.get("method")
            if method is not None and "id" in message:  # the server asks us: ping, and elicitation when we may ask
                reply = {"jsonrpc": "2.0", "id": message["id"]}
                if method == "ping":
                    reply["result"] = {}
                elif method == "elicitation/create" and self.ask:
                    reply["result"] = self.ask(message.get("params") or {})
                else:
                    reply["error"] = {"code": METHOD_NOT_FOUND, "message": "mcpstudio's CLI client has no %s" % method}
                self._send(reply)
            elif method == "notifications/message":
                params = message.get("params") or {}
                data = params.get("data")
                if self.own and _object(params.get("_meta")).get(ON_STDERR_META) is True:
                    continue  # mcpstudio's own warning: the mode wrote it on the stderr it shares with us
                sys.stderr.write("[%s] %s\n" % (params.get("level", "info"),
                                               data if isinstance(data, str) else json.dumps(data)))
            elif method is None:
                with self.lock:
                    self.responses[message.get("id")] = message
                    self.lock.notify_all()
        with self.lock:
            self.closed = True
            self.lock.notify_all()

    def _send(self, message):
        try:
            self.process.stdin.write(json.dumps(message).encode() + b"\n")
            self.process.stdin.flush()
        except (OSError, ValueError):
            pass  # it exited; the waiting request says so

    def request(self, method, params=None, wait=True):
        """Send one request; return its result or raise McpError (the server's error, or why none came).

        The answer is waited for CLIENT_TIMEOUT, or with `wait=False` for as long as the server lives.
        """
        with self.lock:
            self.next_id += 1
            request_id = self.next_id
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        deadline = (time.monotonic() + self.timeout) if wait else None
        with self.lock:
            # Waits in slices: on Windows before 3.14, Ctrl+C cannot interrupt one long wait on a lock.
            while not (request_id in self.responses or self.closed):
                if deadline is not None and time.monotonic() >= deadline:
                    raise McpError(INTERNAL_ERROR, "%s: no answer within %g s from %s" % (method, self.timeout,
                                                                                        _argv_text(self.argv)))
                self.lock.wait(0.25 if deadline is None else min(0.25, max(0.0, deadline - time.monotonic())))
            reply = self.responses.pop(request_id, None)
        if reply is None:
            code = self.process.wait()
            if self.own and code == 2:
                raise ChildRefused(code)
            raise McpError(INTERNAL_ERROR, "%s: the server exited (code %s) before answering; its "
                                           "stderr above says why" % (method, code))
        error = reply.get("error")
        if error is not None:
            raise McpError(error.get("code", INTERNAL_ERROR), str(error.get("message")), error.get("data"))
        return reply.get("result") or {}

    def initialize(self):
        """The handshake; return the server's initialize result."""
        capabilities = {"elicitation": {"form": {}}} if self.ask else {}
        result = self.request("initialize", {"protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": capabilities,
                                             "clientInfo": {"name": "mcpstudio-cli", "version": __version__}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    def list_all(self, method, key):
        """Every page of a list method."""
        items, cursor = [], None
        while True:
            result = self.request(method, {"cursor": cursor} if cursor else {})
            items.extend(result.get(key) or [])
            cursor = result.get("nextCursor")
            if not cursor:
                return items

    def close(self):
        """Close its stdin (how clients stop a server), then stop its process group if it lingers."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        for hard, wait in ((None, STDIN_CLOSE_WAIT * 5), (False, KILL_GRACE), (True, KILL_GRACE)):
            if hard is not None:
                _signal_group(self.process.pid, hard)
            try:
                self.process.wait(wait)
            except subprocess.TimeoutExpired:
                continue
            break
        if _group_alive(self.process.pid):  # something it started outlived it
            _signal_group(self.process.pid, True)
        self.reader.join(KILL_GRACE)
        if not self.reader.is_alive():  # else a process of another group holds the pipe: leave it to exit
            self.process.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _self_command():
    """The argv that runs this very module: the interpreter and mcpstudio.py (or the zipapp)."""
    path = os.path.abspath(__file__)
    folder = os.path.dirname(path)
    if os.path.isfile(folder):  # imported from a zipapp: run the archive
        path = folder
    return [os.path.abspath(sys.executable), path]


def _mode_argv(words, command, server_options=()):
    """The child `inspect` and `call` talk to: mcpstudio in MODE ARGS (after `server_options`, mcpstudio's
    options written before the subcommand: `mcpstudio --timeout 5 call ...`), or the command after `--`."""
    if words[:1] == ["--"]:
        if server_options:
            raise UsageError("%s: %s before %s would be options of mcpstudio's own server, but the server is the "
                             "command after --; give that command its own options" % (
                                 command, _argv_text(server_options), command))
        if len(words) < 2:
            raise UsageError("%s: give the server's command after --, e.g. %s -- npx -y "
                             "@modelcontextprotocol/server-everything" % (command, command))
        return words[1:]
    if not words:
        if {word.partition("=")[0] for word in server_options} & {"--config", "--url", "--root-directory", "--skills"}:
            return _self_command() + list(server_options)  # they name the mode: `mcpstudio --config F call T`
        if not os.path.exists(default_config_path()):
            raise UsageError("%s needs a mode: a template (echo \"{message}\"), --root-directory DIR, "
                             "serve --config FILE, or -- SERVER COMMAND" % command)
        words = ["serve"]
    return _self_command() + list(server_options) + words


def _take_options(words, command, flags=(), values=(), anywhere=False, repeated=()):
    """A subcommand's options (`--x`, `--x V`, `--x=V`) and its other words.

    Options lead, and the rest starts at the first other word; with `anywhere`,
    options may stand between the other words too. An option of `repeated`
    may be given again: its values make a list.
    """
    found, i, others = {}, 0, []
    while i < len(words):
        name, eq, inline = words[i].partition("=")
        if name in ("-h", "--help"):
            raise HelpRequested(command)
        if name in flags and not eq:
            found[name] = True
        elif name in values or name in repeated:
            if not eq:
                i += 1
                if i >= len(words):
                    raise UsageError("%s: %s needs a value" % (command, name))
                inline = words[i]
            if name in repeated:
                found.setdefault(name, []).append(inline)
            else:
                found[name] = inline
        elif anywhere and not words[i].startswith("-"):
            others.append(words[i])
        else:
            break
        i += 1
    return found, others + words[i:]


def _schema_summary(schema):
    """(name, type, detail, description) per property of an input schema."""
    schema = _object(schema)
    props, required = _object(schema.get("properties")), schema.get("required") or []
    rows = []
    for key, prop in props.items():
        kind = prop.get("type", "any")
        if kind == "array" and isinstance(prop.get("items"), dict):
            kind = "%s[]" % prop["items"].get("type", "any")
        detail = ("required" if key in required else
                  "default %s" % json.dumps(prop["default"]) if "default" in prop else "optional")
        if prop.get("enum"):
            detail += ", one of %s" % ", ".join(json.dumps(v) for v in prop["enum"])
        rows.append((key, str(kind), detail, prop.get("description") or ""))
    return rows


def _print_tools(tools):
    """Each tool of a listing: its name and hints, description, parameters and accepted exit codes."""
    for tool in tools:
        hints = [word for key, word in (("readOnlyHint", "read-only"), ("destructiveHint", "destructive"),
                                        ("idempotentHint", "idempotent"), ("openWorldHint", "open-world"))
                 if _object(tool.get("annotations")).get(key)]
        print("  %s%s" % (tool["name"], "  [%s]" % ", ".join(hints) if hints else ""))
        if tool.get("description"):
            print("      %s" % _clip(" ".join(tool["description"].split()), 200))
        rows = _schema_summary(tool.get("inputSchema"))
        longest = max([len(row[2]) for row in rows] or [0])  # a detail past its column keeps two blanks before the text
        for name, kind, detail, text in rows:
            print(("      %-16s %-9s %-*s %s" % (name, kind, 10 if longest < 10 else longest + 1, detail, text)).rstrip())
        ok_codes = _object(tool.get("_meta")).get(OK_EXIT_META)
        if ok_codes:
            print("      exit codes accepted: %s" % ",".join(str(c) for c in ok_codes))


def _print_listing(listing):
    """The readable table of `inspect`."""
    info = listing["serverInfo"]
    print("server: %s %s (protocol %s)" % (info.get("title") or info.get("name", "?"), info.get("version", ""),
                                           listing["protocolVersion"]))
    if listing.get("instructions"):
        print("instructions: %s" % listing["instructions"])
    print("\ntools (%d):" % len(listing["tools"]))
    _print_tools(listing["tools"])
    skills = listing.get("skills") or []
    if skills:
        print("\nskills (%d):" % len(skills))
    for skill in skills:
        files = skill["resources"] if isinstance(skill.get("resources"), list) else []
        print("  %s  (%d files, %d bytes)" % (skill["uri"][:-len("/SKILL.md")], len(files),
                                              sum(f.get("size", 0) for f in files)))
        print("      %s" % _clip(" ".join(str(skill["frontmatter"].get("description")).split()), 200))
    for key, title, uri_key in (("resources", "resources", "uri"), ("resourceTemplates", "resource templates",
                                                                   "uriTemplate")):
        items = [i for i in listing[key] if not (skills and str(i.get(uri_key)).startswith("skill://"))]
        if items:
            print("\n%s (%d%s):" % (title, len(items), ", besides the skills' files" if len(items) < len(listing[key])
                                                       else ""))
        for item in items:
            print("  %-36s %-20s %s" % (item.get(uri_key), item.get("mimeType", ""), item.get("name", "")))
    if listing["prompts"]:
        print("\nprompts (%d):" % len(listing["prompts"]))
    for prompt in listing["prompts"]:
        print("  %s  %s" % (prompt["name"], prompt.get("description", "")))
        for argument in prompt.get("arguments") or []:
            print("      %-16s %-10s %s" % (argument.get("name"), "required" if argument.get("required") else
                                            "optional", argument.get("description", "")))


def inspect_command(words, server_options=()):
    """`inspect [--json] [--search QUERY [--limit N]] [MODE ARGS...]`: what a mode (or a server after --) serves,
    or the tools a search of it finds."""
    found, words = _take_options(words, "inspect", flags=("--json",), values=("--search", "--limit"))
    limit = found.get("--limit")
    if limit is not None and "--search" not in found:
        raise UsageError("inspect: --limit goes with --search QUERY (how many of the tools it finds to show)")
    if limit is not None and not (limit.isdigit() and 0 < int(limit) <= SEARCH_MAX):
        raise UsageError("inspect: --limit needs a number of tools from 1 to %d, not %r" % (SEARCH_MAX, limit))
    with StdioClient(_mode_argv(words, "inspect", server_options), own=words[:1] != ["--"]) as client:
        hello = client.initialize()
        capabilities = hello.get("capabilities") or {}
        listing = {"serverInfo": hello.get("serverInfo") or {}, "protocolVersion": hello.get("protocolVersion"),
                   "instructions": hello.get("instructions"), "capabilities": capabilities,
                   **{key: [] for _, _, key in LISTINGS}}
        for capability, method, key in LISTINGS:
            if capability in capabilities and "--search" not in found:
                listing[key] = client.list_all(method, key)
        if "--search" in found:  # the tools a search finds, as `mcpstudio__search_tools` answers them
            try:
                result = client.request("tools/call", {"name": MANAGER_PREFIX + "__search_tools", "arguments": {
                    "query": found["--search"], "limit": int(limit or SEARCH_LIMIT)}})
            except McpError as exc:
                if not exc.message.startswith("Unknown tool"):
                    raise
                raise McpStudioError("inspect --search: this server has no tool search (mcpstudio serves one for a config "
                                 "with MCP servers whose toolSearch is not \"off\"); inspect without --search lists "
                                 "every tool") from None
            listing = {"query": found["--search"], "tools": result["structuredContent"]["tools"]}
        elif SKILLS_EXTENSION in _object(capabilities.get("extensions")):
            listing["skills"] = client.list_all("skills/list", "skills")
    if found.get("--json"):
        print(json.dumps(listing, indent=2))
    elif "query" in listing:  # the search's finds alone, as the model gets them
        print("search %s finds %d tools, best first:" % (json.dumps(listing["query"]), len(listing["tools"])))
        _print_tools(listing["tools"])
    else:
        _print_listing(listing)
    return 0


_ARGUMENT_WORD = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]*)=(.*)", re.S)


def _takes_a_file(prop):
    """Whether a parameter's schema asks for a file's content: base64 (contentEncoding), or a data: URI as
    mcpstudio's file fields describe it."""
    prop = _object(prop)
    if prop.get("type") == "array":
        return _takes_a_file(prop.get("items"))
    description = str(prop.get("description") or "")
    return prop.get("type") == "string" and (prop.get("contentEncoding") == "base64" or (
        "data:" in description and "base64" in description))


def _file_argument(key, path, prop):
    """`key=@PATH` (curl's convention) for a file parameter: the file's bytes as a data: URI naming it, or plain
    base64 where the schema says contentEncoding base64."""
    try:
        with open(os.path.expanduser(path), "rb") as f:
            data = f.read()
    except OSError as exc:
        raise UsageError("call: %s=@%s: cannot read the file: %s" % (key, path, exc.strerror or exc)) from None
    encoded = base64.b64encode(data).decode("ascii")
    prop = _object(prop)
    if _object(prop.get("items") if prop.get("type") == "array" else prop).get("contentEncoding") == "base64":
        return encoded
    name = os.path.basename(path)
    return "data:%s;name=%s;base64,%s" % (_file_mime(name), re.sub(r"[,;]", "_", name), encoded)


def _call_arguments(pairs, schema):
    """key=value words as the tool's schema types them: strings stay text, other types read as JSON, and
    `@PATH` for a file parameter the file's content."""
    props = _object(_object(schema).get("properties"))
    arguments = {}
    for key, text in pairs:
        kind = _object(props.get(key)).get("type")
        value = text
        if text.startswith("@") and _takes_a_file(props.get(key)):
            value = text = _file_argument(key, text[1:], props.get(key))
            kind = "string"
        if kind not in ("string", None):
            try:
                value = json.loads(text)
            except ValueError:
                pass  # the server's validation says what it wanted
        if kind == "array" and not isinstance(value, list):
            arguments.setdefault(key, []).append(value)  # `file=a file=b` makes a list
            continue
        if key in arguments:
            raise UsageError("call: %s= is given twice (only an array parameter takes several)" % key)
        arguments[key] = value
    return arguments


def _print_content(content, out):
    for block in content or []:
        kind = block.get("type")
        if kind == "text":
            out.write(block.get("text", "") + ("" if block.get("text", "").endswith("\n") else "\n"))
        elif kind == "resource":
            resource = block.get("resource") or {}
            if "text" in resource:
                out.write(resource["text"] + ("" if resource["text"].endswith("\n") else "\n"))
            else:
                out.write("[resource %s: %s, %d bytes of base64]\n" % (resource.get("uri"), resource.get("mimeType"),
                                                                        len(resource.get("blob", ""))))
        elif kind == "resource_link":
            out.write("[link %s %s]\n" % (block.get("uri"), block.get("name", "")))
        else:
            out.write("[%s: %s, %d bytes of base64]\n" % (kind, block.get("mimeType"), len(block.get("data", ""))))


def _typed(text, field):
    """An answer as its schema field reads it: text for a string, yes or no for a boolean, else JSON (left as
    text when it is not: the server's validation says what it wanted); an array takes a single value too."""
    kind = field.get("type")
    if kind == "boolean":
        return text.strip().lower() in ("y", "yes", "true", "1")
    if kind in ("string", None):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        value = text
    return [value] if kind == "array" and not isinstance(value, list) else value


def ask_fields(schema, ask):
    """The properties of an object schema (a tool's input, a server's form) asked one at a time, on the terminal
    or the TUI's status line: `ask(prompt)` gives a line, or None to give up (then None). An empty line keeps
    the field's default, if it has one; an answer is read as its field's type says (_typed)."""
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    content = {}
    for key, field in _object(schema.get("properties")).items():
        field = _object(field)
        choices = field.get("enum") or [option.get("const") for option in field.get("oneOf") or ()
                                        if isinstance(option, dict)]
        hint = "/".join(str(c) for c in choices) if choices else field.get("type", "text")
        default = " [%s]" % json.dumps(field["default"]) if "default" in field else ""
        text = ask("  %s (%s%s)%s: " % (field.get("title") or key, hint, ", required" if key in required else "", default))
        if text is None:
            return None
        if text:
            content[key] = _typed(text, field)
        elif "default" in field:
            content[key] = field["default"]
    return content


def elicitation_answer(params, assume_yes, ask=input):
    """`call`'s answer to a server's question (a form): with `assume_yes`, accept its defaults; else ask
    each field on the terminal, an empty line keeping the default. A URL-mode question is declined."""
    schema = _object(params.get("requestedSchema"))
    fields = _object(schema.get("properties"))
    if params.get("mode") == "url":
        _say("the server asks you to open %s; declined (call cannot follow it)"
             % params.get("url"))
        return {"action": "decline"}
    _say("the server asks: %s" % (params.get("message") or "(no message)"))
    if assume_yes:  # its defaults, and yes to a yes-or-no question that has none
        content = {key: field["default"] if "default" in field else True for key, field in fields.items()
                   if isinstance(field, dict) and ("default" in field or field.get("type") == "boolean")}
        return {"action": "accept", "content": content}

    def line(prompt):
        try:
            return ask(prompt)
        except EOFError:
            return None
    content = ask_fields(schema, line)
    return {"action": "cancel"} if content is None else {"action": "accept", "content": content}


def _json_or_text(text):
    """`text` re-serialized if it is JSON (to compare with structured content), else itself."""
    try:
        return json.dumps(json.loads(text))
    except ValueError:
        return text


def call_command(words, server_options=()):
    """`call TOOL [key=value ...] [--json ARGS] [MODE ARGS...]`: one tools/call, as a client makes it."""
    if not words:
        raise UsageError("call needs a TOOL, e.g. mcpstudio call echo message=hi echo \"{message}\"")
    tool, words, found, pairs = words[0], words[1:], {}, []
    while True:  # options and key=value words, in any order, until the mode's words
        options, words = _take_options(words, "call", flags=("--raw", "--yes"), values=("--json",))
        found.update(options)
        match = _ARGUMENT_WORD.fullmatch(words[0]) if words else None
        if not match:
            break
        pairs.append(match.groups())
        words = words[1:]
    given, raw, assume_yes = found.get("--json", "{}"), found.get("--raw"), found.get("--yes")
    try:
        given = json.loads(given)
    except ValueError as exc:
        raise UsageError("call: --json %r is not JSON: %s" % (given, exc))
    if not isinstance(given, dict):
        raise UsageError("call: --json needs a JSON object, e.g. '{\"message\": \"hi\"}'")
    ask = (lambda params: elicitation_answer(params, assume_yes)) if assume_yes or (
        sys.stdin.isatty() and sys.stderr.isatty()) else None
    with StdioClient(_mode_argv(words, "call", server_options), ask=ask, own=words[:1] != ["--"]) as client:
        hello = _object(client.initialize())
        listed = _object(next((t for t in client.list_all("tools/list", "tools") if t.get("name") == tool), None))
        tasks = _object(_object(_object(_object(hello.get("capabilities")).get("tasks")).get("requests")).get("tools"))
        try:
            params = {"name": tool, "arguments": dict(given, **_call_arguments(pairs, listed.get("inputSchema")))}
            if _object(listed.get("execution")).get("taskSupport") == "required" and "call" in tasks:  # plain: -32601
                result = client.request("tools/call", dict(params, task={}))
                if isinstance(_object(result.get("task")).get("taskId"), str):  # created: its end is its result
                    result = client.request("tasks/result", {"taskId": result["task"]["taskId"]}, wait=False)
            else:  # (a server that declares no tasks answers a task-required tool's plain call, or says why not)
                result = client.request("tools/call", params, wait=False)
        except McpError as exc:
            _say("error: %s (code %s)" % (exc, exc.code))
            return 1
    if raw:
        print(json.dumps(result, indent=2))
    else:  # a kept output ends with its server, here with this call: how to see it all instead
        _print_content([dict(block, text=re.sub(r"read them with resources/read \S+; the (?:whole|kept) output is \S+", "rerun with "
                                                "a larger --max-text (or the config's max_text) to see them", block["text"]))
                        if "text" in block else block for block in result.get("content") or []
                        if not str(block.get("uri")).startswith(OUTPUT_URI)], sys.stderr if result.get("isError") else sys.stdout)
        structured = result.get("structuredContent")
        texts = [b.get("text") for b in result.get("content") or [] if b.get("type") == "text"]
        if structured is not None and json.dumps(structured) not in [_json_or_text(t) for t in texts]:
            print(json.dumps(structured, indent=2))
    return 1 if result.get("isError") else 0


# Where each client keeps its MCP servers, and the key they go under. Claude
# Code's user scope is ~/.claude.json; VS Code's user file is mcp.json in its
# settings folder; Codex uses TOML tables [mcp_servers.NAME].
CLIENTS = ("claude-code", "claude-desktop", "cursor", "vscode", "codex")


def _app_folder(platform):
    """Where desktop apps keep settings: Application Support, %APPDATA%, or $XDG_CONFIG_HOME."""
    if platform == "darwin":
        return os.path.expanduser("~/Library/Application Support")
    if platform == "win32":
        return os.environ.get("APPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Roaming")
    return os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")


def client_config_path(client, platform=None):
    """The user-level file `client` reads its MCP servers from, on `platform` (default: this one)."""
    platform = platform or sys.platform
    home = os.path.expanduser("~")
    if client == "claude-code":
        return os.path.join(os.environ.get("CLAUDE_CONFIG_DIR") or home, ".claude.json")
    if client == "claude-desktop":
        return os.path.join(_app_folder(platform), "Claude", "claude_desktop_config.json")
    if client == "cursor":
        return os.path.join(home, ".cursor", "mcp.json")
    if client == "vscode":
        return os.path.join(_app_folder(platform), "Code", "User", "mcp.json")
    if client == "codex":
        return os.path.join(os.environ.get("CODEX_HOME") or os.path.join(home, ".codex"), "config.toml")
    raise UsageError("unknown client %r; use one of %s" % (client, ", ".join(CLIENTS)))


def _servers_key(client):
    return "servers" if client == "vscode" else "mcpServers"


_PATH_OPTIONS = ("--config", "--root-directory", "--skills", "--cwd", "--log")


def _absolute_mode(words):
    """MODE ARGS with the paths its options name made absolute (clients start servers in their own folder)."""
    words = list(words)
    options, rest = parse_command_line(words)
    end = len(words) - len(rest)
    if rest and rest[0] in ("serve", "check") and words[end - 1:end] != ["--"]:
        _, after = parse_command_line(rest[1:])
        end = len(words) - len(after)
    i = 0
    while i < end:
        name, eq, value = words[i].partition("=")
        if name in _PATH_OPTIONS:
            if eq:
                words[i] = "%s=%s" % (name, _absolute(value))
            elif i + 1 < end:
                i += 1
                words[i] = _absolute(words[i])
        i += 1
    return words


def _mode_options(words):
    """(options, template words, whether it serves a config) of MODE ARGS, reading on past `serve` or `check`."""
    options, rest = parse_command_line(list(words))
    served = rest[:1] in (["serve"], ["check"])
    if served:
        options, rest = parse_command_line(rest[1:], options)
    return options, rest, served


def _entry_name(words):
    """A server name for the client's list: --name, the command, the script folder or the config's file name."""
    options, rest, _ = _mode_options(words)
    folder = options["root_directory"] or (options["skills"][0] if options["skills"] and not options["config"] else None)
    name = (options["name"] or (os.path.basename(rest[0]) if rest else None)
            or (os.path.basename(os.path.normpath(folder)) if folder else None)
            or os.path.splitext(os.path.basename(options["config"] or default_config_path()))[0])
    return _UNSAFE_NAME_CHARS.sub("_", name) or "mcpstudio"


def cached_command():
    """(argv, env) that start this module from cached bytecode: `python3 -m mcpstudio` with its
    folder on PYTHONPATH, and PYTHONPYCACHEPREFIX in the user's cache folder where the module's own
    folder cannot hold a __pycache__. Import recompiles a changed mcpstudio.py, as always. A zipapp,
    or a file whose name is no module name, runs as it is."""
    argv = _self_command()
    folder, name = os.path.split(argv[1])
    module, extension = os.path.splitext(name)
    if extension != ".py" or not module.isidentifier():
        return argv, {}
    env = {"PYTHONPATH": folder}
    cache = os.path.join(folder, "__pycache__")
    if not os.access(cache if os.path.isdir(cache) else folder, os.W_OK):
        env["PYTHONPYCACHEPREFIX"] = os.path.join(user_cache_dir(), "bytecode")
    # -P (3.11+): the client's working folder is not put first on sys.path, so a project's own
    # json.py or secrets.py cannot stand in for the standard library's.
    return [argv[0]] + (["-P"] if sys.version_info >= (3, 11) else []) + ["-m", module], env


def client_entry(client, words):
    """(entry dict, note or None): what `client` needs to run mcpstudio with MODE ARGS `words`."""
    options = _mode_options(words)[0]
    if options["http"] is not None:
        if client == "claude-desktop":
            raise UsageError("install: Claude Desktop's config file starts stdio servers only; drop --http")
        host, port = parse_http_address(options["http"])
        host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
        url = "http://%s:%d%s" % ("[%s]" % host if ":" in host else host, port, HTTP_PATH)
        token = options["http_token"] or os.environ.get(HTTP_TOKEN_VARIABLE)
        entry = {"type": "http", "url": url} if client in ("claude-code", "vscode") else {"url": url}
        if token:
            entry["headers"] = {"Authorization": "Bearer %s" % token}
        note = "the client connects to a running server; start it with: %s" % _argv_text(_self_command() + words)
        return entry, note
    argv, env = cached_command()
    entry = {"command": argv[0], "args": argv[1:] + _absolute_mode(words), "env": env}
    if client in ("claude-code", "vscode"):
        entry = {"type": "stdio", **entry}
    if client == "claude-desktop" and _POSIX and os.environ.get("PATH"):
        # Started from the Dock or Finder, Claude Desktop passes launchd's PATH (/usr/bin:/bin:/usr/sbin:
        # /sbin): the commands mcpstudio runs would not find Homebrew's or nvm's. They get this shell's.
        env["PATH"] = os.environ["PATH"]
    return entry, None


def _drop_entry_env():
    """Take out of our environment what cached_command's entry added, so no command we run inherits it."""
    if os.environ.get("PYTHONPATH") == os.path.dirname(os.path.abspath(__file__)):
        del os.environ["PYTHONPATH"]
    if os.environ.get("PYTHONPYCACHEPREFIX") == os.path.join(user_cache_dir(), "bytecode"):
        del os.environ["PYTHONPYCACHEPREFIX"]


def _toml_string(text):
    return json.dumps(text)  # a JSON string with \uXXXX escapes is a TOML basic string


def _toml_key(name):
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _toml_string(name)


def _toml_table(name, entry):
    """A Codex [mcp_servers.NAME] table for `entry`."""
    lines = ["[mcp_servers.%s]" % _toml_key(name)]
    if "url" in entry:
        lines.append("url = %s" % _toml_string(entry["url"]))
        if entry.get("headers"):
            lines.append("http_headers = { %s }" % ", ".join(
                "%s = %s" % (_toml_string(k), _toml_string(v)) for k, v in entry["headers"].items()))
    else:
        lines.append("command = %s" % _toml_string(entry["command"]))
        lines.append("args = [%s]" % ", ".join(_toml_string(a) for a in entry["args"]))
        if entry.get("env"):
            lines.append("env = { %s }" % ", ".join(
                "%s = %s" % (_toml_key(k), _toml_string(v)) for k, v in entry["env"].items()))
    return "\n".join(lines) + "\n"


def _merge_toml_table(text, name, table):
    """(new text, replaced?): `text` with the [mcp_servers.NAME] table (and its subtables) replaced or added."""
    header = re.compile(r"^\s*\[\[?\s*(mcp_servers\.%s)?" % re.escape(_toml_key(name)))
    out, skipping, replaced = [], False, False
    for line in text.splitlines(True):
        if line.lstrip().startswith("["):
            match = header.match(line)
            own = match is not None and match.group(1) is not None and re.match(
                r"\s*[\].]", line[match.end():])
            if own and not replaced:
                out.append(table + "\n")
                replaced = True
            skipping = bool(own)
        if not skipping:
            out.append(line)
    if not replaced:
        if out and not out[-1].endswith("\n"):
            out.append("\n")
        out.append(("\n" if out else "") + table)
    return "".join(out), replaced


def _text_of(path):
    """A file's text; "" when it does not exist."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def _read_json_file(path, what):
    """(data, text) of a JSON or JSONC file; ({}, "") when it does not exist."""
    text = _text_of(path)
    stripped = strip_json_comments(text)
    try:
        data = json.loads(stripped) if stripped.strip() else {}
    except ValueError as exc:
        raise ConfigError("%s: %s is not valid JSON: %s; fix it (or move it aside) and try again" % (what, path, exc))
    if not isinstance(data, dict):
        raise ConfigError("%s: %s holds %s, not a JSON object" % (what, path, _type_name(data)))
    return data, text


_SPACE = re.compile(r"\s*")


def _members(stripped, brace):
    """([(key, key_start, value_start, value_end)], closing brace) of the object at `brace` of comment-free text."""
    decoder, members = json.JSONDecoder(), []
    i = _SPACE.match(stripped, brace + 1).end()
    while stripped[i] != "}":
        key, after = decoder.raw_decode(stripped, i)
        value_start = _SPACE.match(stripped, _SPACE.match(stripped, after).end() + 1).end()
        value_end = decoder.raw_decode(stripped, value_start)[1]
        members.append((key, i, value_start, value_end))
        i = _SPACE.match(stripped, value_end).end()
        if stripped[i] == ",":
            i = _SPACE.match(stripped, i + 1).end()
    return members, i


def _indent_at(text, index):
    line = text[text.rfind("\n", 0, index) + 1:index]
    return line[:len(line) - len(line.lstrip())]


def _json_at(value, indent):
    """`value` as JSON indented to sit at `indent`, or on one line when `indent` is None."""
    if indent is None:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)


def _next_edit(text, stripped, brace, old, new):
    """One (start, end, replacement) that brings the object at `brace` closer to `new`, or None."""
    members, close = _members(stripped, brace)
    keys = [m[0] for m in members]
    one_line = "\n" not in stripped[brace:close]  # `{"a": 1, "b": 2}` stays on its line
    for index, (key, key_start, value_start, value_end) in enumerate(members):
        if key not in new or keys.count(key) > 1:  # gone (or written twice: the last one counts)
            if index:
                return members[index - 1][3], value_end, ""
            if len(members) == 1:
                return brace + 1, value_end, ""
            line_start = key_start - len(_indent_at(stripped, key_start))
            end = re.compile(r"\s*,(?:[ \t]*\n)?").match(stripped, value_end).end()
            return (line_start if stripped[line_start - 1:line_start] == "\n" else key_start), end, ""
        if old[key] != new[key]:
            if isinstance(old[key], dict) and isinstance(new[key], dict):
                return _next_edit(text, stripped, value_start, old[key], new[key])
            return value_start, value_end, _json_at(new[key], None if one_line else _indent_at(stripped, key_start))
    for key, value in new.items():
        if key not in old:
            if members:
                end = members[-1][3]
                if one_line:
                    return end, end, ", %s: %s" % (json.dumps(key), _json_at(value, None))
                indent = _indent_at(stripped, members[-1][1])
                member = "\n%s%s: %s" % (indent, json.dumps(key), _json_at(value, indent))
                line_end = text.find("\n", end)
                if line_end > 0 and not stripped[end:line_end].strip():  # after a `// comment` on its line
                    tail = text[end:line_end]
                    return end, line_end, ("" if tail.lstrip().startswith(",") else ",") + tail + member
                return end, end, "," + member
            outer = _indent_at(stripped, brace)
            member = "\n%s  %s: %s" % (outer, json.dumps(key), _json_at(value, outer + "  "))
            if text[brace + 1:close].strip():  # only a comment inside: keep it after the member
                return brace + 1, brace + 1, member
            return brace + 1, close, member + "\n" + outer
    return None


def _comments(text):
    """The comments of a JSONC text, without their spacing (to tell whether an edit dropped one)."""
    return "".join(c for c, kept in zip(text, strip_json_comments(text)) if c != kept and not c.isspace() and c != ",")


def edited_json_text(text, new, path):
    """`text` (JSON or JSONC) changed to hold `new`, object member by member, so the comments, order and
    layout of everything unchanged stay as they were; plain JSON when `text` is empty."""
    if not text.strip():
        return json.dumps(new, indent=2, ensure_ascii=False) + "\n"
    result = text
    for _ in range(10000):
        stripped = strip_json_comments(result)
        edit = _next_edit(result, stripped, _SPACE.match(stripped).end(), json.loads(stripped), new)
        if edit is None:
            break
        start, end, replacement = edit
        result = result[:start] + replacement + result[end:]
    if json.loads(strip_json_comments(result)) != new:  # cannot happen; if it does, be correct rather than pretty
        _say("warning: %s is rewritten as plain JSON; its comments are in the .bak" % path)
        return json.dumps(new, indent=2, ensure_ascii=False) + "\n"
    if _comments(result) != _comments(text):
        _say("warning: comments inside the entries changed in %s are gone (the .bak "
             "keeps them)" % path)
    return result


def write_file_atomically(path, text):
    """Replace `path` with `text` via a temporary file and rename (mode 0600 for a new file, else
    the old mode); keep the old file as `path.bak` first. Returns the backup's path, if one was made.

    A symlink (a dotfiles manager's) stays one: its target is what is replaced. A target that is
    read-only, or in a folder that is, is refused with a McpStudioError before anything changes."""
    import shutil
    import tempfile
    link, path = path, os.path.realpath(path)
    shown = path if link == path else "%s (the target of the link %s)" % (path, link)
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    try:
        mode, saved = os.stat(path).st_mode & 0o777, link + ".bak"  # beside the name the user gave, as always
    except FileNotFoundError:
        mode, saved = 0o600, None
    if not mode & 0o222:
        raise McpStudioError("%s is read-only; nothing was changed (make it writable, or edit the file "
                             "it is made from)" % shown)
    try:
        fd, temporary = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
    except OSError as exc:  # a read-only folder or store
        raise McpStudioError("cannot write %s: %s; nothing was changed" % (shown, exc.strerror or exc)) from None
    try:
        if saved:
            shutil.copy2(path, saved)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return saved


def _check_mode(words):
    """Build (and start nothing of) the server MODE ARGS `words` run, so install refuses an entry the
    server would refuse: a bad template raises TemplateError, a bad config ConfigError, as they would."""
    options, rest, served = _mode_options(words)
    server, _ = _build_server(options, rest, Log(), options["config"] or (default_config_path() if served else None))
    if server.catalog.refusal:  # serve would start, and answer every request with the error it logged
        raise ConfigError("install: this server would refuse every request (the error above); no entry printed or written")


def install_command(words):
    """`install --client NAME [--as SERVER] [--write] [MODE ARGS...]`: the client's entry for this mode."""
    found, words = _take_options(words, "install", flags=("--write",), values=("--client", "--as", "--file"))
    client = found.get("--client")
    if client not in CLIENTS:
        raise UsageError("install needs --client %s%s" % ("|".join(CLIENTS), ", not %r" % client if client else ""))
    if not words:
        if not os.path.exists(default_config_path()):
            raise UsageError("install needs a mode: a template (echo \"{message}\"), --root-directory DIR, or "
                             "serve --config FILE")
        words = ["serve", "--config", default_config_path()]
    try:
        _check_mode(words)
    except ConfigError as exc:
        _say("error: %s" % exc)
        return 2
    name = found.get("--as") or _entry_name(words)
    entry, note = client_entry(client, words)
    path = found.get("--file") or client_config_path(client)
    shown = _toml_table(name, entry) if client == "codex" else json.dumps(
        {_servers_key(client): {name: entry}}, indent=2) + "\n"
    if not found.get("--write"):
        sys.stdout.write(shown)
        _say("this goes in %s%s; add it with --write" % (path, (
            " (or: claude mcp add-json --scope user %s %s)" % (name, _argv_text([json.dumps(entry)]))
            if client == "claude-code" else "")))
    else:
        if client == "codex":
            text, replaced = _merge_toml_table(_text_of(path), name, shown)
        else:
            data, text = _read_json_file(path, "install")
            servers = data.setdefault(_servers_key(client), {})
            if not isinstance(servers, dict):
                raise ConfigError("install: %s: `%s` is not an object; fix it first" % (path, _servers_key(client)))
            replaced = name in servers
            servers[name] = entry
            text = edited_json_text(text, data, path)
        saved = write_file_atomically(path, text)
        print("%s %s in %s%s" % ("replaced" if replaced else "added", name, path,
                                 " (backup: %s)" % saved if saved else ""))
    if note:
        _say(note)
    return 0


_VSCODE_ONLY = re.compile(r"\$\{(workspaceFolder\w*|userHome|cwd|file\w*|relativeFile\w*|input:[^}]*|command:[^}]*)\}")


def _env_references(value):
    """VS Code's ${env:NAME} as mcpstudio's ${NAME}, everywhere in an entry."""
    if isinstance(value, str):
        return re.sub(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}", r"${\1}", value)
    if isinstance(value, dict):
        return {k: _env_references(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_env_references(v) for v in value]
    return value


def imported_server(entry):
    """(entry for mcpstudio's config, None) or (None, why it is skipped), for one client server entry."""
    if not isinstance(entry, dict):
        return None, "not an object"
    if "envFile" in entry:
        return None, "it reads variables from envFile %s; put them in `env` (as ${VAR}) and import again" % (
            json.dumps(entry["envFile"]))
    found = _VSCODE_ONLY.search(json.dumps(entry, ensure_ascii=False))  # in any string of the entry
    if found:
        return None, ("it uses VS Code's %s, which only VS Code can fill in; replace it with a path or "
                      "${VAR} and import again" % found.group(0))
    if "command" not in entry and "url" not in entry:
        return None, "it has neither `command` nor `url`"
    return {key: _env_references(entry[key]) for key in _SERVER_KEYS if key in entry}, None


def _client_servers(client, path):
    """The servers a client's config file lists (Claude Code: the user's, this folder's in ~/.claude.json,
    and its .mcp.json)."""
    data, _ = _read_json_file(path, "import")
    if not data and not os.path.exists(path):
        raise ConfigError("import: %s does not exist%s" % (path, " (is %s installed and set up here?)" % client
                                                             if client else ""))
    servers = {}
    for key in _SERVER_GROUPS:
        servers.update(_object(data.get(key)))
    if client == "claude-code":  # and this folder's servers
        servers.update(_object(_object(_object(data.get("projects")).get(os.getcwd())).get("mcpServers")))
    if client == "claude-code" and os.path.isfile(".mcp.json"):  # the project's shared servers
        servers.update(_object(_read_json_file(".mcp.json", "import")[0].get("mcpServers")))
    return servers


def _same_id(data, name, besides=()):
    """The config's server (not in `besides`) whose id is the id of `name`: the server would refuse both."""
    wanted = _server_id(name)
    return next((key for group in _SERVER_GROUPS for key in _object(data.get(group))
                 if key not in besides and _server_id(key) == wanted), None)


def import_command(words):
    """`import FILE|--from CLIENT [--config FILE] [--write]`: a client's servers into mcpstudio's config."""
    found, words = _take_options(words, "import", flags=("--write",), values=("--from", "--config"), anywhere=True)
    client = found.get("--from")
    if client is not None and client not in CLIENTS[:4]:
        raise UsageError("import --from takes %s, not %r" % ("|".join(CLIENTS[:4]), client))
    if len(words) != (0 if client else 1):
        raise UsageError("import takes one FILE or --from CLIENT, e.g. mcpstudio import --from claude-desktop")
    target = found.get("--config") or default_config_path()
    data, text = _read_json_file(target, "import")
    existing = _object(data.get("mcpServers"))
    added = {}
    for name, entry in _client_servers(client, client_config_path(client) if client else words[0]).items():
        kept, why = imported_server(entry)
        if kept is not None and (name in existing or name in _object(data.get("servers"))):
            kept, why = None, "%s already has a server %s (remove it first to replace it)" % (target, name)
        clash = kept is not None and (_same_id(data, name) or _same_id({"mcpServers": added}, name))
        if clash:
            kept, why = None, ("its id `%s` is also the id of server %s, and the config would refuse both; "
                               "rename one of them" % (_server_id(name), clash))
        if kept is None:
            print("skip    %s: %s" % (name, why))
            continue
        added[name] = kept
        dropped = sorted(set(entry) - set(kept))
        print("import  %s: %s%s%s" % (name, kept.get("url") or _argv_text([kept["command"]] + [
            str(a) for a in kept.get("args", [])]), " (disabled)" if kept.get("disabled") else "",
            "; not carried over: %s" % ", ".join(dropped) if dropped else ""))
    if not found.get("--write"):
        print("dry run: nothing written; add --write to put %d server(s) into %s" % (len(added), target))
        return 0
    if not added:
        print("nothing to import into %s" % target)
        return 0
    data.setdefault("mcpServers", {}).update(added)
    write_file_atomically(target, edited_json_text(text, data, target))
    print("wrote %d server(s) into %s" % (len(added), target))
    return 0


def _config_option(words, command, flags=(), values=()):
    """(options, config path, rest) for the config-editing subcommands."""
    found, rest = _take_options(words, command, flags=flags, values=("--config",) + tuple(values), anywhere=True)
    return found, found.get("--config") or default_config_path(), rest


def add_command(words):
    """`add NAME [--config FILE] [--env K=V]... [--cwd DIR] [--disabled] -- COMMAND ARGS...` (or --url URL)."""
    if not words:
        raise UsageError("add needs a NAME and -- COMMAND ARGS..., e.g. mcpstudio add time -- uvx mcp-server-time")
    name = words[0]
    found, rest = _take_options(words[1:], "add", flags=("--disabled",), values=("--config", "--cwd", "--url"),
                                repeated=("--env", "--header"))
    if rest and rest[0] != "--":
        raise UsageError("add: unexpected %r; the server's command goes after --" % rest[0])
    env, headers = (_key_values(found.get(option, ()), "add: " + option) for option in ("--env", "--header"))
    command = rest[1:]
    if not command and not found.get("--url"):
        raise UsageError("add %s: give the server's command after --, or --url URL" % name)
    entry = {"url": found["--url"]} if found.get("--url") else {"command": command[0], "args": command[1:]}
    if found.get("--url") and command:
        raise UsageError("add %s: give --url or a command, not both" % name)
    if env:
        entry["env"] = env
    if headers:
        entry["headers"] = headers
    if found.get("--cwd"):
        entry["cwd"] = _absolute(found["--cwd"])
    if found.get("--disabled"):
        entry["disabled"] = True
    path = found.get("--config") or default_config_path()
    data, text = _read_json_file(path, "add")
    servers = data.setdefault("mcpServers", {})
    replaced = name in servers
    other = _same_id(data, name, (name,) if replaced else ())
    if other:
        raise ConfigError("add: %s has a server %s, and %s would have the same id `%s` (ids are the names with "
                          "characters other than A-Z a-z 0-9 _ - made _); choose another name or remove %s first"
                          % (path, other, name, _server_id(name), other))
    servers[name] = entry
    write_file_atomically(path, edited_json_text(text, data, path))
    print("%s %s in %s" % ("replaced" if replaced else "added", name, path))
    return 0


def _server_group(data, name, command, path):
    """The group ("mcpServers" or "servers") that holds the config's server `name`; else a ConfigError naming
    the servers it has."""
    for group in _SERVER_GROUPS:
        if name in _object(data.get(group)):
            return group
    known = [key for group in _SERVER_GROUPS for key in _object(data.get(group))]
    raise ConfigError("%s: %s has no server %s (it has: %s)" % (command, path, name, ", ".join(known) or "none"))


def _namespace_members(data, create=None):
    """name -> (its list of server names, its entry) for each namespace of a config, in every form the
    server reads: {"NS": {"servers": [...]}}, mcp-studio's {"NS": {"serverIds": [...]}}, {"NS": [...]},
    and mcp-studio's list [{"id": "NS", "serverIds": [...]}]. The lists are the config's own, so
    changing one changes `data`; a namespace without one gets an empty list, kept in `data` only for
    namespace `create` (under the key the server reads)."""
    found = data.get("namespaces")
    if isinstance(found, list):
        pairs = [(item.get("id"), item) for item in found if isinstance(item, dict)]
    else:
        pairs = list(_object(found).items())
    out = {}
    for name, entry in pairs:
        if isinstance(entry, list):
            out[name] = (entry, entry)
        elif isinstance(entry, dict):
            key = "serverIds" if "serverIds" in entry else "servers"
            if name == create and not isinstance(entry.get(key), list):
                entry[key] = []
            out[name] = (entry[key] if isinstance(entry.get(key), list) else [], entry)
    return out


def _permission_value(item, key, old):
    """A toolPermissions entry's `key`, or mcp-studio's older name for it (as the server reads it)."""
    item = _object(item)
    return item.get(key if key in item else old)


def _drop_permissions(data, matches):
    """Remove the toolPermissions entries `matches` accepts (and the key, once empty)."""
    permissions = data.get("toolPermissions")
    if isinstance(permissions, list):
        permissions[:] = [item for item in permissions if not matches(item)]
        if not permissions:
            del data["toolPermissions"]


def remove_command(words):
    """`remove NAME [--config FILE]`: drop a server, and every mention of it in namespaces and permissions."""
    found, path, rest = _config_option(words, "remove")
    if len(rest) != 1:
        raise UsageError("remove takes one server NAME, e.g. mcpstudio remove time")
    name = rest[0]
    data, text = _read_json_file(path, "remove")
    del data[_server_group(data, name, "remove", path)][name]
    same = (name, _server_id(name))  # a namespace or permission may name the server by key or by id
    for members, entry in _namespace_members(data).values():
        members[:] = [m for m in members if m not in same]
        defaults = _object(entry).get("serverDefaults")
        if isinstance(defaults, dict):
            for key in [k for k in defaults if k in same]:
                del defaults[key]
    _drop_permissions(data, lambda item: _permission_value(item, "server", "serverId") in same)
    write_file_atomically(path, edited_json_text(text, data, path))
    print("removed %s from %s" % (name, path))
    return 0


def _config_plan(path, log: Log, runner=None):
    """(its path, its own sources, the info ConfigLoader.load gives, its UpstreamPlan: an empty one without MCP
    servers) of the config file `path`, its secrets masked in `log`."""
    loader = ConfigLoader(path)
    local, info = loader.load(runner or ProcessRunner(log), log, RunSettings())
    log.add_secrets(loader.secrets)
    return loader.path, local, info, info["upstream"] or UpstreamPlan([], {}, None, "defaultNamespace")


def _sign_in_for(words, command) -> OAuthClient:
    """The OAuthClient of `login`/`logout NAME|URL [--config FILE]`: a URL server of the config by name, or a URL."""
    found, path, rest = _config_option(words, command)
    if len(rest) != 1:
        raise UsageError("%s takes one server: the NAME of a URL server in the config, or its URL" % command)
    target = rest[0]
    specs = []
    if os.path.exists(path) or found.get("--config"):
        specs = [spec for spec in _config_plan(path, Log())[3].specs if spec.url]
    spec = next((s for s in specs if target in (s.key, s.id, s.url)), None)
    if spec:
        if spec.oauth is None:
            raise UsageError("%s: server %s has \"oauth\": false in %s" % (command, target, path))
        return OAuthClient(spec.url, spec.key, spec.oauth, interactive=True, config=path)
    if re.match(r"https?://[^/?#]+", target):
        return OAuthClient(target, interactive=True)
    raise UsageError("%s: %s is not a URL server of %s (those are: %s); give its URL instead" % (
        command, target, path, ", ".join(s.key for s in specs) or "none"))


def login_command(words):
    """`login NAME|URL [--config FILE]`: sign in to a remote server now, in the browser."""
    oauth = _sign_in_for(words, "login")
    oauth.login()
    print("signed in to %s: %s (kept in %s)" % (oauth.name, oauth.summary(), oauth.store.path))
    return 0


def logout_command(words):
    """`logout NAME|URL [--config FILE]`: forget a server's tokens and client registration."""
    oauth = _sign_in_for(words, "logout")
    problem = oauth.revoke()
    if oauth.store.delete():
        print("signed out of %s (deleted %s; %s)" % (oauth.name, oauth.store.path, "the token is revoked" if problem
                                                    is None else "could not revoke the token: " + problem))
    else:
        print("%s: not signed in (no %s)" % (oauth.name, oauth.store.path))
    return 0


def secrets_command(words):
    """`secrets set|remove NAME --person SUBJECT` (set: the value on stdin), `secrets list --person SUBJECT`: a
    signed-in person's own secrets, for `${person.NAME}` in an isolated server (see PersonSecrets)."""
    found, rest = _take_options(words, "secrets", values=("--person",), anywhere=True)
    person, action = found.get("--person"), rest[0] if rest else None
    if not person or action not in ("set", "remove", "list") or len(rest) != (1 if action == "list" else 2) or (
            action != "list" and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", rest[1])):
        raise UsageError("secrets takes: set NAME --person SUBJECT (the value on stdin), remove NAME --person "
                         "SUBJECT, or list --person SUBJECT; NAME is what ${person.NAME} names; SUBJECT is the "
                         "identity provider's, or static:NAME for a person of the config's `people`")
    store = PersonSecrets()
    if action == "list":
        for name in sorted(store.of(person)):
            print(name)
        return 0
    value = None
    if action == "set":
        if sys.stdin.isatty():
            import getpass
            value = getpass.getpass("%s's %s: " % (person, rest[1]))
        else:
            value = sys.stdin.read().rstrip("\r\n")
        if not value:
            raise UsageError("secrets set %s: no value on stdin" % rest[1])
    there = store.set(person, rest[1], value)
    print("%s %s's secret %s in %s" % ("set" if value else "removed" if there else "no such secret: kept", person,
                                       rest[1], store.path))
    return 0


def enable_command(words, enabled=True):
    """`enable NAME` / `disable NAME` [--config FILE]: whether serve starts the server (`disabled` in its entry)."""
    command = "enable" if enabled else "disable"
    found, path, rest = _config_option(words, command)
    if len(rest) != 1:
        raise UsageError("%s takes one server NAME, e.g. mcpstudio %s time" % (command, command))
    name = rest[0]
    data, text = _read_json_file(path, command)
    entry = data[_server_group(data, name, command, path)][name]
    if not isinstance(entry, dict):
        raise ConfigError("%s: the entry of server %s in %s is not an object; fix it by hand" % (command, name, path))
    for key in ("enabled", "disabled"):  # mcp-studio's `enabled` and the clients' `disabled`: one answer
        entry.pop(key, None)
    if not enabled:
        entry["disabled"] = True
    write_file_atomically(path, edited_json_text(text, data, path))
    print("%sd %s in %s" % (command, name, path))
    return 0


def disable_command(words):
    """`disable NAME [--config FILE]`."""
    return enable_command(words, enabled=False)


def _default_key(data):
    """The key the config's default namespace is under (as the server reads it)."""
    return "defaultNamespace" if "defaultNamespace" in data or "defaultNamespaceId" not in data else "defaultNamespaceId"


def list_command(words):
    """`list [--config FILE] [--json]`: the config's servers, how each starts, and their namespaces."""
    found, path, rest = _config_option(words, "list", flags=("--json",))
    if rest:
        raise UsageError("list takes only --config FILE and --json, not %r" % rest[0])
    data, _ = _read_json_file(path, "list")
    namespaces = _namespace_members(data)
    default = data.get(_default_key(data))
    rows = []
    for group in _SERVER_GROUPS:
        for name, entry in _object(data.get(group)).items():
            entry = _object(entry)
            member_of = [ns for ns, (members, _) in namespaces.items() if name in members or _server_id(name) in members]
            rows.append({"name": name, "runs": entry.get("url") or _argv_text(
                [str(entry.get("command", "?"))] + [str(a) for a in entry.get("args", [])]),
                "disabled": bool(entry.get("disabled")), "namespaces": member_of})
    if found.get("--json"):
        print(json.dumps({"config": path, "servers": rows, "defaultNamespace": default}, indent=2))
        return 0
    print("%s: %d server(s)%s" % (path, len(rows), ", default namespace %s" % default if default else ""))
    for row in rows:
        print("  %-20s %s%s%s" % (row["name"], row["runs"], "  (disabled)" if row["disabled"] else "",
                                  "  [%s]" % ", ".join(row["namespaces"]) if row["namespaces"] else ""))
    return 0


def namespace_command(words):
    """`namespace add NS [SERVER...] | remove NS | assign NS SERVER... | default NS` [--config FILE]."""
    found, path, rest = _config_option(words, "namespace")
    if not rest:
        raise UsageError("namespace needs add, remove, assign or default (see namespace --help)")
    action, rest = rest[0], rest[1:]
    if action not in ("add", "remove", "assign", "default", "allow", "deny") or not rest:
        raise UsageError("namespace add NS [SERVER...] | remove NS | assign NS SERVER... | default NS | "
                         "allow|deny NS SERVER TOOL")
    permission = action in ("allow", "deny")
    if permission and len(rest) != 3:
        raise UsageError("namespace %s NS SERVER TOOL: a tool of a server, in a namespace" % action)
    data, text = _read_json_file(path, "namespace")
    namespaces = data.setdefault("namespaces", {})
    name, servers = rest[0], rest[1:2] if permission else rest[1:]
    members = _namespace_members(data, create=name if action == "assign" else None)
    for server in servers:
        _server_group(data, server, "namespace", path)
    if action == "add":
        if name in members:
            raise ConfigError("namespace: %s already has a namespace %s; use namespace assign" % (path, name))
        if isinstance(namespaces, list):  # mcp-studio's list form
            namespaces.append({"id": name, "name": name, "serverIds": servers})
        else:
            namespaces[name] = {"servers": servers}
        said = "added namespace %s" % name
    elif name not in members:
        raise ConfigError("namespace: %s has no namespace %s (it has: %s)" % (path, name, ", ".join(members) or "none"))
    elif action == "remove":
        if isinstance(namespaces, list):
            namespaces[:] = [item for item in namespaces if _object(item).get("id") != name]
        else:
            del namespaces[name]
        _drop_permissions(data, lambda item: _permission_value(item, "namespace", "namespaceId") == name)
        for key in ("defaultNamespace", "defaultNamespaceId"):
            if data.get(key) == name:
                del data[key]
        if not namespaces:
            del data["namespaces"]
        said = "removed namespace %s" % name
    elif action == "assign":
        if not servers:
            raise UsageError("namespace assign %s needs one or more SERVER names" % name)
        listed = members[name][0]
        listed.extend(s for s in servers if s not in listed and _server_id(s) not in listed)
        said = "namespace %s: %s" % (name, ", ".join(listed))
    elif permission:  # one toolPermissions entry for the namespace, server and tool
        server, tool = rest[1], rest[2]
        same = (server, _server_id(server))
        _drop_permissions(data, lambda item: _permission_value(item, "namespace", "namespaceId") == name
                          and _permission_value(item, "server", "serverId") in same and item.get("toolName") == tool)
        data.setdefault("toolPermissions", []).append({"namespace": name, "server": server, "toolName": tool,
                                                       "enabled": action == "allow"})
        said = "namespace %s: %s tool %s of %s" % (name, "allowed" if action == "allow" else "denied", tool, server)
    else:
        data[_default_key(data)] = name
        said = "default namespace: %s" % name
    write_file_atomically(path, edited_json_text(text, data, path))
    print("%s (%s)" % (said, path))
    return 0


# What `python3 OUT.pyz` runs: import the module and call its entry point, as CPython's
# zipapp.MAIN_TEMPLATE does. From 3.10 on the spec is made here, with the file name given,
# because zipimport's own find_spec unmarshals the whole module once just to learn its file
# name and then again to run it (2 ms of a 55 ms start); 3.8 and 3.9 have no exec_module.
_ZIPAPP_MAIN = """\
import importlib.util, sys
if sys.version_info < (3, 10) or not hasattr(__loader__, "archive"):  # or unpacked into a folder
    import mcpstudio as module
else:
    spec = importlib.util.spec_from_file_location("mcpstudio", __loader__.archive + "/mcpstudio.py", loader=__loader__)
    module = sys.modules["mcpstudio"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
sys.exit(module.main())
"""


def zipapp_command(words):
    """`zipapp OUT.pyz`: this module as one runnable file, with bytecode for this interpreter.

    The module goes in once, as `mcpstudio`, both .py and .pyc; `__main__.py`
    is one line, as CPython's own zipapp writes: import the module, call its
    entry point. zipimport takes a .pyc beside its .py in the archive's root
    (never __pycache__) when its magic number is this Python's; the .pyc is an
    unchecked-hash one, so no timestamp in the archive has to match, and it is
    stored, not deflated, so a start does not inflate 700 KB first. Another
    Python version finds a foreign magic number and compiles the (deflated)
    source instead.
    """
    found, rest = _take_options(words, "zipapp", anywhere=True)
    if len(rest) != 1:
        raise UsageError("zipapp takes one OUT.pyz, e.g. mcpstudio zipapp mcpstudio.pyz")
    import py_compile
    import tempfile
    import zipfile
    out = rest[0]
    source = os.path.abspath(__file__)
    if not source.endswith(".py") or not os.path.isfile(source):
        raise UsageError("zipapp: build it from mcpstudio.py, not from %s" % source)
    with tempfile.TemporaryDirectory() as folder:
        compiled = py_compile.compile(source, cfile=os.path.join(folder, "mcpstudio.pyc"), dfile="mcpstudio.py",
                                      doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        temporary = None
        try:  # a file of its own beside OUT (mkstemp: never one that is there already), renamed over OUT when whole
            handle, temporary = tempfile.mkstemp(prefix=os.path.basename(out) + ".", suffix=".tmp",
                                                 dir=os.path.dirname(out) or ".")
            with os.fdopen(handle, "wb") as f:
                f.write(b"#!/usr/bin/env python3\n")
                with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as archive:
                    archive.writestr("__main__.py", _ZIPAPP_MAIN)
                    archive.write(source, "mcpstudio.py")
                    archive.write(compiled, "mcpstudio.pyc", compress_type=zipfile.ZIP_STORED)
            os.chmod(temporary, 0o755)
            os.replace(temporary, out)
        except OSError as exc:  # a missing folder, a folder of that name, a full disk: no half-built file is left
            if temporary:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
            raise McpStudioError("zipapp: cannot write %s: %s" % (out, exc.strerror or exc)) from None
    print("wrote %s (bytecode for Python %d.%d, source for the others); run it with: %s %s --help"
          % (out, *sys.version_info[:2], _PYTHON, _argv_text([out])))
    return 0


STARTER_CONFIG = """\
// mcpstudio config for %(name_comment)s. Comments and trailing commas are fine here.
//   serve it:  %(prog)s serve --config %(file)s
//   check it:  %(prog)s check --config %(file)s
{
  "name": %(name_json)s,
  "description": %(description_json)s,
  // Variables for every command. ${VAR} and ${VAR:-default} come from your environment.
  "environment": {},
  // Seconds a command may run; without it, --timeout or 30 s (a tool can say its own "timeout").
  // "timeout": 30,
  "tools": [
    {
      // A template string, as on mcpstudio's command line: {x} required, [x] optional,
      // {x...} a list, [--flag] a boolean. No shell ever runs.
      "name": %(help_json)s,
      "description": %(help_description_json)s,
      "command": %(help_command_json)s,
      "annotations": {"readOnlyHint": true}
    },
    {
      // Typed parameters, and a command_template with {#if} blocks. Careful: an array of
      // arguments can carry any option of the command, so this tool can do whatever the
      // command can. Narrow it to the parameters you mean, or delete it.
      "name": %(run_json)s,
      "description": %(run_description_json)s,
      "parameters": {
        "args": {"type": "array", "description": %(args_description_json)s},
        "help": {"type": "boolean", "description": "Show the help of what args name", "default": false}
      },
      "command_template": %(run_command_json)s,
      "annotations": {"destructiveHint": true}
    }
  ],
  "resources": [
    // Read by running a command; a {param} in the uri makes a resource template.
    {"uri": %(uri_json)s, "name": %(version_name_json)s, "command": %(version_command_json)s}
  ],
  // Folders of self-describing scripts, served as in --root-directory mode.
  "scripts": []
}
"""


def init_config(args):
    """`init NAME --command CMD [--description D] [-o FILE] [--force]`: write a starter config."""
    found, rest = _take_options(args, "init", flags=("--force",), anywhere=True,
                                values=("--command", "--description", "-o", "--output"))
    unexpected = [word for word in rest if word.startswith("-")] or rest[1:]
    if unexpected:
        raise UsageError("init: unexpected %r; usage: mcpstudio init NAME --command CMD "
                         "[--description TEXT] [-o FILE] [--force]" % unexpected[0])
    command = found.get("--command")
    if not rest or not command:
        raise UsageError("init needs a NAME and --command CMD, e.g. mcpstudio init git --command git")
    name = _UNSAFE_NAME_CHARS.sub("_", rest[0])
    output = found.get("-o") or found.get("--output") or name + ".json"
    if os.path.exists(output) and not found.get("--force"):
        sys.stderr.write("mcpstudio: error: %s exists; use --force to overwrite it\n" % output)
        return 1
    import shlex
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise UsageError("init: --command %r: %s" % (command, exc))
    if not words:
        raise UsageError("init: --command is empty")
    quoted = shlex.join(words)  # template words, which mcpstudio splits as a POSIX shell does on every system
    values = {  # each goes into the starter as JSON, under its key + "_json"
        "name": rest[0], "help_description": "Show how to use %s." % command,
        "run_description": "Run %s with arguments." % command, "args_description": "Arguments for %s" % command,
        "version_name": "%s version" % command, "description": found.get("--description") or "Tools for %s." % command,
        "help": name + "_help", "run": name + "_run", "help_command": "%s --help" % quoted,
        "run_command": "%s {args}{#if help} --help{/if}" % quoted, "uri": "%s://version" % name.replace("_", "-"),
        "version_command": "%s --version" % quoted}
    text = STARTER_CONFIG % dict({key + "_json": json.dumps(value) for key, value in values.items()},
                                 name_comment=re.sub(r"\s", " ", rest[0]), file=_argv_text([output]), prog=_prog())
    folder = os.path.dirname(os.path.abspath(output))
    try:  # its folder too: the default config's (~/.config/mcpstudio) may not exist yet
        os.makedirs(folder, exist_ok=True)
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        blocker = folder
        while not os.path.exists(blocker) and os.path.dirname(blocker) != blocker:
            blocker = os.path.dirname(blocker)  # the nearest folder on the way that is there
        why = "%s is a file, not a folder" % blocker if os.path.isfile(blocker) else exc.strerror or exc
        raise McpStudioError("init: cannot write %s: %s" % (output, why)) from None
    print("wrote %s; check it with: %s check --config %s" % (output, _prog(), _argv_text([output])))
    return 0


def _example_value(name, prop):
    """A value that shows what the parameter does in the rendered command."""
    if prop.get("enum"):
        return prop["enum"][0]
    return {"integer": 1, "number": 1.5, "boolean": True, "array": ["<%s>" % name]}.get(prop.get("type"), "<%s>" % name)


def _check_verdict(problems, warnings):
    """The last line of `check`: "ok" only when it found nothing to say."""
    def counted(n, word):
        return "%d %s%s" % (n, word, "" if n == 1 else "s")
    if problems:
        return "%s (above)%s" % (counted(problems, "problem"), ", and %s" % counted(warnings, "warning") if warnings else "")
    return "loads, with %s (above)" % counted(warnings, "warning") if warnings else "ok"


STATUS_STATE_WIDTH = 44  # the widest state `status` puts in its table; a longer one follows the table


def review_overrides(plan: UpstreamPlan, namespace, listings, separator, log: Log):
    """What `serve` would say of the overrides of `namespace` against `listings` ({server id: its cached
    tools}): overrides naming no listed tool (warnings on stderr), and a line for each curated tool and
    each refused override (with the count of those)."""
    view = Namespace(None, separator, None, log, plan, namespace)
    lines, refused, served, shown = [], 0, [], []  # shown: (public name, the key that renamed it or None)
    for spec in plan.specs:
        if spec.id not in listings:
            continue
        tools = listings[spec.id]
        view.unmatched(spec.overrides, [tool["name"] for tool in tools], "server `%s`" % spec.id,
                       "against its cached listing; `status --check` lists it again")
        for tool in tools:
            served.append(plan.curation(None, spec, tool["name"], separator)[1])
            if plan.left_out(namespace, spec, tool["name"], separator) is not None:
                continue
            try:
                curated, public, renamed_by = view.curate(spec, tool)
            except ConfigError as exc:
                lines.append("  %s: refused: %s" % (spec.public_name(tool["name"], separator), exc))
                refused += 1
                continue
            shown.append((public if renamed_by else spec.public_name(tool["name"], separator), renamed_by))
            if curated:
                lines.append("  %-32s %s of server %s%s" % (public, tool["name"], spec.id, "; fixed: %s" % ", ".join(
                    sorted(curated.fixed)) if curated.fixed else ""))
    claimed = collections.Counter(name for name, _ in shown)
    for name, renamed_by in shown:
        if renamed_by and claimed[name] > 1:  # as list_tools refuses it
            lines.append("  %s: refused: %s: `%s` is also the name of another tool; choose another" % (
                name, renamed_by, name))
            refused += 1
    overrides = (plan.namespaces.get(namespace) or {}).get("overrides")
    if overrides and served:
        view.unmatched(overrides, served, "namespace `%s`" % namespace, "against its servers' cached listings")
    return lines, refused


def print_status(path, plan: UpstreamPlan, requested, checks=None, log=None, search=(None, TOOL_SEARCH_THRESHOLD),
                 local=0, separator="__", forced=None, manager=True, sign_in=None, tally=None):
    """The table of `status`: servers, cached tool counts (or --check results), sign-in, namespaces and who may
    use each, what a client's tools/list holds (`local`: the config's own tools; `forced`: --tool-search), the
    curated tools, and the counters of each running `serve` of the config. Returns status's exit code; `tally`
    (a Counter), when given, gets "refused": the overrides it refused (check counts them among its problems)."""
    namespace, how, error = select_namespace(plan.namespaces, requested, plan.default, plan.default_key)
    print("config: %s" % path)
    if error and requested is None and plan.default is None:  # several, none chosen: each client's entry chooses
        print("namespace: none chosen (the config has several: %s); serve needs --namespace NAME in its args, or "
              "\"%s\" in the config" % (", ".join(plan.namespaces), plan.default_key))
        error = None
    else:
        print("namespace: %s" % ("error: %s" % error if error else "%s (%s)" % (namespace or "(all servers)", how)))
    rows = [("SERVER", "TOOLS" if checks is None else "CHECK", "COMMAND")]
    results = {spec.id: (seconds, tools, problem) for spec, seconds, tools, problem in (checks or ())}
    names, listings = {}, {}  # names: id -> its tools' names, as checked or last cached; listings: each usable
    # server's cached tools, for review_overrides
    for spec in plan.specs:
        entry = None if spec.disabled or spec.error else ListingCache(
            os.path.join(user_cache_dir(), "server-%s.json" % spec.listed().launch), log).read()  # as serve lists it
        if entry and (not namespace or spec.id in plan.namespaces[namespace]["servers"]):
            listings[spec.id] = entry["tools"]
        if spec.disabled:
            state = "disabled"
        elif spec.error:
            state = "error: %s" % spec.error
        elif checks is not None and spec.id not in results:
            state = "skipped: not in namespace %s" % namespace
        elif checks is not None:
            seconds, tools, problem = results[spec.id]
            names[spec.id] = tools or []
            state = "failed: %s" % problem if problem else "ok, %d tool%s, started in %.0f ms" % (
                len(tools), "" if len(tools) == 1 else "s", seconds * 1000)
        else:
            try:
                names[spec.id] = [_object(tool).get("name") for tool in entry["tools"]]
                state = "%d (cached %s)" % (len(entry["tools"]), time.strftime("%Y-%m-%d %H:%M", time.localtime(entry["saved"])))
            except (ValueError, KeyError, TypeError, OverflowError, OSError):
                state = "- (not cached yet)"
        command = spec.display() if not spec.error else ""
        if spec.isolation != "shared" and not spec.error:  # one process per person or session
            command += "  (isolation %s, at most %d%s)" % (spec.isolation, spec.max_instances,
                                                           {"passthrough": ", each person's own token",
                                                            "exchange": ", each person's token exchanged for one of "
                                                                        "its own"}.get(spec.person_token, ""))
        rows.append((spec.id, mask_secrets(state), log.mask(command)))
    # A long error would widen the whole table (to 200 columns): its row says "(below)", the table is followed
    # by each such server and its whole message.
    below = [(row[0], row[1]) for row in rows[1:] if len(row[1]) > STATUS_STATE_WIDTH]
    rows = [(row[0], row[1].partition(":")[0] + " (below)" if len(row[1]) > STATUS_STATE_WIDTH else row[1], row[2])
            for row in rows]
    if len(rows) == 1:
        print("\nno servers configured")
    else:
        width = [max(len(row[i]) for row in rows) for i in range(2)]
        print()
        for row in rows:
            print(("%-*s  %-*s  %s" % (width[0], row[0], width[1], row[1], row[2])).rstrip())
        if below:
            print()
        for server_id, state in below:
            print("%s  %s" % (server_id, state))
    signed = [spec for spec in plan.specs if spec.url and spec.oauth is not None and not spec.error]
    if signed:
        print("\nsign-in (OAuth; `mcpstudio login NAME` signs in):")
        for spec in signed:
            print("  %-*s  %s" % (max(len(s.key) for s in signed), spec.key, OAuthClient(spec.url).summary()))
    if sign_in:
        print("\npeople sign in (serve --http): %s; audience %s" % ("; ".join(
            (["tokens of %s" % sign_in["issuer"]] if sign_in["issuer"] else []) +
            (["opaque ones asked of %s" % sign_in["introspection"]] if sign_in["introspection"] else []) +
            (["listed tokens of %s" % ", ".join(sign_in["people"])] if sign_in["people"] else [])),
            sign_in["audience"] or "this server's own /mcp URL"))
        print("  who may use a namespace: the people its `people` names (a subject, an email, group:NAME, scope:NAME, or *);"
              " a namespace without `people`: every signed-in person")
        print("  each namespace at /mcp/NAME; /mcp serves %s and follows its rule: a person it does not admit gets "
              "403 there for every request" % ("the one marked *" if namespace else "no namespace (none is chosen)"
                                                if plan.namespaces else "every server (the config has no namespaces)"))

    def summary(name, mode):
        # A signed-in person's listing, as serve counts it for the threshold: the manager tools are only for those
        # `admins` names (Aggregator.hides), who get them too.
        admins = sign_in and manager and sign_in.get("admins")
        count = served_tool_count(plan, name, names, separator, local, manager and not sign_in)
        return search_summary(count, forced or mode or search[0], search[1]) + (
            "; `admins` also get the manager tools" if admins else "")
    if plan.namespaces:
        print("\nnamespaces:")
        for name, ns in plan.namespaces.items():
            mark = "*" if name == namespace else " "
            people = ns.get("people")
            print(" %s %-16s %s  (%s)%s" % (mark, name, ", ".join(ns["servers"]) or "(no servers)",
                                            summary(name, ns["tool_search"]),
                                            "" if not sign_in and people is None else "  people: %s" % (
                                                ", ".join(people) if people else "none" if people == [] else
                                                "every signed-in person")))
    else:
        print("\ntools: %s" % summary(None, None))
    curated, refused = review_overrides(plan, namespace, listings, separator, log) if not error else ([], 0)
    if curated:
        print("\ncurated tools (overrides, as cached listings show them):")
        print("\n".join(curated))
    if tally is not None:
        tally["refused"] += refused
    for snapshot in RunningStats.running(path):
        print("\n  ".join(["\nrunning: serve pid %(pid)d (%(transport)s) since %(started)s; per tool since then:"
                           % snapshot] + RunningStats.table(snapshot["tools"])))
    return 1 if error or refused or any(r[3] for r in checks or ()) or any(s.error for s in plan.specs) else 0


def check_config(path, log: Log, options):
    """`check --config FILE`: print what the file serves and the argv an example call runs."""
    server, _ = _build_server(options, [], log, config=path)
    sources, hub, refused, warned = [], None, 0, 0
    for source in server.catalog.sources:
        if isinstance(source, Aggregator):  # the file's own sources, then its servers (check reports each kind)
            hub = source
            sources.extend(source.local)
        elif not isinstance(source, OutputStore):
            sources.append(source)
    for source in sources:
        if isinstance(source, ScriptDirectory):
            print("\nscripts: %s (discovered when served)" % source.root)
            continue
        if isinstance(source, SkillFolders):
            found = source.look(announce=False)  # each refusal once, in the list below, not on stderr too
            print("\nskills in %s:" % ", ".join(source.roots))
            for skill, (_, _, frontmatter, files) in sorted(found.items()):
                print("  %-32s %3d files %9d bytes  %s" % (skill, len(files), sum(st.st_size for _, st in files.values()),
                                                         _clip(frontmatter["description"].replace("\n", " "), 60)))
            for skill_md, problem in sorted(source.problems.items()):
                print("  not served: %s: %s" % (skill_md, problem))
            refused += len(source.problems)
            continue
        if source.tools:
            print("\ntools:")
        for tool, spec in ((tool, tool.spec) for tool in source.tools.values()):
            props = tool.schema.get("properties", {})
            required = tool.schema.get("required", [])
            program = spec.template.words[0][0] if not spec.shell else "sh"
            missing = isinstance(program, str) and program_not_found(program, tool.settings.env)
            if missing:
                print("  warning: %s: %s" % (tool.name, missing))
                warned += 1
            used = {f.key for t in (spec.template, spec.stdin) if t for f in t.occurrences()}
            used.update(b.key for b in getattr(spec.template, "blocks", ()))
            for key in props:
                if key not in used:
                    print("  warning: %s: parameter `%s` is declared but no template uses it" % (tool.name, key))
                    warned += 1
            # The example a call with the required parameters runs (optional parts off, as they are when left
            # out, and defaults added, as a call gets them), then, when it differs, one with every parameter given.
            examples = []
            for keys in ([k for k in props if k in required], list(props)):
                try:
                    given = {k: _example_value(k, props[k]) for k in keys}
                    examples.append(_argv_text(tool.argv(dict(spec.defaults, **given))))
                except ToolError as exc:
                    examples.append("(example refused: %s)" % exc)
            argv = examples[0] + ("\n      with every parameter: %s" % examples[1] if examples[1] != examples[0] else "")
            support = "" if tool.settings.task_support == "optional" else "  (tasks: %s)" % tool.settings.task_support
            print("  %s  %s%s" % (tool.name, spec.description, support))
            for key, prop in props.items():
                detail = ("required" if key in required else "asked of the user: %s" % spec.asked[key]
                          if key in spec.asked else
                          "default %s" % json.dumps(prop["default"]) if "default" in prop else "optional")
                print("      %-16s %-8s %s" % (key, prop.get("type", "any"), detail))
            print("      example: %s" % argv)
        if source.command_resources:
            print("\nresources:")
        for resource in source.command_resources:
            kind = "template" if resource.pattern else "resource"
            print("  %-32s %-9s %-12s %s" % (resource.uri, kind, resource.mime_type, resource.template.display()))
    if hub:
        print("\nMCP servers (tools as last cached; `mcpstudio status --check` starts them):")
        tally = collections.Counter()  # the overrides the table refuses, against the cached listings
        print_status(hub.config_path, hub.namespace.plan, options["namespace"], log=log, search=hub.tool_search,
                     local=local_tool_count(hub.local), separator=hub.separator, forced=options["tool_search"],
                     manager=hub.manager_tools, tally=tally)
        plan = hub.namespace.plan
        refused += sum(1 for spec in plan.specs if spec.error and not spec.disabled) + bool(hub.namespace.refusal)
        refused += tally["refused"]
        warned -= sum(1 for spec in hub._specs.values() if spec.error)  # logged as warnings: counted as problems
    # The verdict comes last, after everything it sums up, naming what was checked: the file, else the skill folders.
    checked = os.path.abspath(path) if path is not None else ", ".join(
        root for source in sources if isinstance(source, SkillFolders) for root in source.roots)
    print("\n%s: %s" % (checked, _check_verdict(refused, warned + log.warnings)))
    return min(refused, 1)


async def check_upstreams(plan, runner, log, namespace, config_path):
    """`status --check`: start each server of the namespace, list it, stop it; (spec, seconds, tool names, error)
    each."""
    hub = Aggregator([], plan, runner, log, namespace=namespace, watch_interval=0, config_path=config_path)
    hub.start(None)  # nobody listens: it is stopped after one listing
    gate = asyncio.Semaphore(LIST_PARALLEL)
    progress = TerminalProgress("checked", len(hub.upstreams))

    async def one(upstream):
        async with gate:
            if not upstream.usable():
                return upstream.spec, None, None, upstream.spec.error or "disabled"
            started = time.monotonic()
            try:
                await upstream.ready()
                return upstream.spec, time.monotonic() - started, [t.get("name") for t in upstream.listing["tools"]], None
            except UpstreamError as exc:
                return upstream.spec, None, None, exc.message
            finally:
                await upstream.stop("status --check is done")
                progress.step(upstream.spec.id)
    try:
        return await asyncio.gather(*(one(u) for u in hub.upstreams.values()))
    finally:
        progress.finish()
        await hub.close()


def status_command(path, log: Log, options):
    """`status [--config FILE] [--namespace NAME] [--check]`."""
    path, local, info, plan = _config_plan(path, log)
    for spec in plan.specs:
        log.add_secrets(spec.secrets)
    checks, requested = None, options["namespace"]
    # The namespace chosen (by --namespace, the config's default, or as the only one) is checked; with none
    # chosen, every server is: its health does not depend on the namespace a client will pick. An unknown
    # --namespace checks nothing (print_status says why).
    chosen = select_namespace(plan.namespaces, requested, plan.default, plan.default_key)[0]
    checked = plan if chosen else plan.every_server()
    if options["check"] and (requested is None or requested in plan.namespaces):
        runner = ProcessRunner(log)

        async def check():
            try:
                return await check_upstreams(checked, runner, log, namespace=requested, config_path=path)
            finally:
                await runner.stop_all()
                runner.close_watchdog()
        checks = asyncio.run(check())
    return print_status(path, plan, options["namespace"], checks, log=log, search=info["tool_search"],
                        local=local_tool_count(local), separator=info["separator"], forced=options["tool_search"],
                        manager=not options["no_manager_tools"], sign_in=info["sign_in"])


# --------------------------------------------------------------------------
# tui: the config's MCP servers in the terminal
# --------------------------------------------------------------------------
# Two classes. `Board` is the model, without curses: the config's servers, the
# ones it started (the same Aggregator and Upstream code as `serve`, on an
# asyncio loop in a thread) and its edits (the same code as the CLI commands,
# so each keeps its .bak and writes through a symlink). `TuiScreen` draws it
# with curses and turns keys into the Board's actions; it never waits on a
# server, so a slow start never freezes the screen. curses is imported by
# `tui` only: serving never loads it.

TUI_TICK_MS = 100  # the screen is redrawn this often while no key is pressed
# The keys, as `?` shows them: a key (or keys), then, after two spaces or more, what it does.
TUI_KEYS = tuple(tuple(re.split(r"  +", line, maxsplit=1)) for line in """\
Up/Down j/k  move (in details: between tools)
/            filter the servers by name
Enter        details: command or URL, env names, tools, their permissions
t            test: start the server as serve does, list its tools; again: stop
l            the server's log: its stderr and mcpstudio's lines about it
f            in the log: follow new lines
c            in details: call the selected tool (a form from its input schema)
p            in details: allow or deny the selected tool in the namespace
e            enable or disable the server
a            add a server: a name, then a command or a URL
d            remove the server (asks first)
n            namespaces: create, assign the server, the default, the one shown
r            read the config again
?            this help
Esc          back
q            quit; stops every server the TUI started""".split("\n"))


def _width(char):
    """The terminal cells `char` takes: a wide character (CJK, most emoji) two, a control character two (^[)."""
    import unicodedata
    return 1 + (unicodedata.east_asian_width(char) in "WF" or not char.isprintable())


def _cells(text, width):
    """`text` clipped (with ...) and padded to `width` terminal cells."""
    while sum(map(_width, text)) > width:
        text = text[:-4] + "..."  # (the ... of the last turn and one more character)
    return text + " " * (width - sum(map(_width, text)))


class _TuiLog(Log):
    """mcpstudio's own lines, kept for the log panel: the terminal belongs to curses."""

    def __init__(self):
        super().__init__()
        self.lines = collections.deque(maxlen=500)

    def _write(self, level, message, to_stderr):
        self.lines.append("%s mcpstudio: %s%s" % (time.strftime("%H:%M:%S"), "" if level == "info" else level + ": ",
                                                  self.mask(message)))


class Board:
    """What the TUI shows and does, without curses (see the section comment)."""

    plan = None
    said = ""  # what the last action did or why it was refused, for the status line (say)

    def __init__(self, path, namespace=None):
        self.path, self.shown = path, namespace  # `shown`: the namespace whose permissions show and toggle
        self.log = _TuiLog()
        self.runner = ProcessRunner(self.log)
        self.results = {}  # (server id, tool) -> the last call's text, or None while it runs
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self._run_loop, name="mcpstudio-tui", daemon=True).start()
        self.hub = self.run(self._open())

    def _run_loop(self):
        """The loop's thread: run until close() stops it, then close it (its resources go with it)."""
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def run(self, coroutine, timeout=30):
        """Run on the loop and wait: for quick things only (reading the config, stopping)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def submit(self, coroutine):
        """Run on the loop without waiting (a start, a call); its outcome shows on the screen."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        return future

    def _read(self):
        """The config again: the whole plan for the screen, and every server (no namespace) for the hub."""
        _, local, info, self.plan = _config_plan(self.path, self.log, self.runner)
        self.local, self.search = local_tool_count(local), info["tool_search"]  # for count()
        if self.shown not in self.plan.namespaces:
            self.shown = select_namespace(self.plan.namespaces, None, self.plan.default, self.plan.default_key)[0]
        return [], self.plan.every_server(), None

    async def _open(self):
        _, plan, _ = self._read()
        hub = Aggregator([], plan, self.runner, self.log, watch_interval=0, config_path=self.path,
                         reload=self._read, manager_tools=False)
        hub.start(None)  # the Board polls it
        return hub

    def say(self, text):
        """Put `text` on the status line: what the screen's last action did, or why it was refused."""
        self.said = text

    def show(self, namespace):
        """Show `namespace`'s permissions (and toggle them), or say which namespaces there are."""
        if namespace in self.plan.namespaces:
            self.shown, self.said = namespace, "showing namespace %s" % namespace
        else:
            self.said = "no namespace %s (there are: %s)" % (namespace, ", ".join(self.plan.namespaces) or "none")

    # -- what the screen shows ---------------------------------------------------------------

    def listing(self, upstream):
        """The server's tools: live, else from the listing cache (whatever client it was listed for)."""
        return upstream and (upstream.listing or upstream.cache.read()) or None

    def count(self):
        """What a client's tools/list holds in the shown namespace, counted as serve and status count (of
        servers whose tools are known), and the clients whose caps a longer list passes."""
        listings = {spec.id: [tool.get("name") for tool in _object(self.listing(self.hub.upstreams.get(spec.id))).get(
            "tools", ())] for spec in self.plan.specs}
        count = served_tool_count(self.plan, self.shown, listings, self.hub.separator, self.local)
        mode = _object(self.plan.namespaces.get(self.shown)).get("tool_search") or self.search[0]
        summary = search_summary(count, mode, self.search[1])
        over = [pair for pair in CLIENT_CAPS if count > pair[1]] if summary.startswith("off") else []
        return summary + (", over " + ", ".join("%s %d" % pair for pair in over) if over else "")

    def rows(self, text_filter=""):
        """One dict a server: name, id, transport, enabled, state, tools, namespaces, error."""
        rows = []
        for spec in self.plan.specs:
            if text_filter and text_filter.lower() not in spec.key.lower():
                continue
            upstream = self.hub.upstreams.get(spec.id)
            listing = self.listing(upstream)
            state = upstream.state if upstream else "disabled" if spec.disabled else "error"
            state = {"misconfigured": "error", "stopped-by-user": "stopped", "crashed": "failed"}.get(state, state)
            error = spec.error or (upstream.last_error if upstream else None) or ""
            rows.append({"name": spec.key, "id": spec.id, "transport": "url" if spec.url else "command",
                         "enabled": not spec.disabled, "state": state,
                         "tools": len(listing["tools"]) if listing else None, "error": mask_secrets(" ".join(error.split())),
                         "namespaces": [ns for ns, entry in self.plan.namespaces.items() if spec.id in entry["servers"]]})
        return rows

    def details(self, server_id):
        """A server's command or URL (secrets masked), env names, tools, each tool's permission per namespace and
        its counters in each running `serve` of the config (RunningStats)."""
        spec = self._spec(server_id)
        listing = self.listing(self.hub.upstreams.get(server_id)) or {}
        tools, running = [], list(RunningStats.running(self.path))
        for tool in listing.get("tools", ()):
            shown, public, renamed = tool, spec.public_name(tool["name"], self.hub.separator), False
            try:  # as the shown namespace's tools/list gives it (overrides): its name, description and schema
                curated, public = self.curated(spec, tool)
                shown = curated.tool if curated else tool
                renamed = public != spec.public_name(tool["name"], self.hub.separator)
                notes = (["%s of %s" % (tool["name"], spec.key)] if renamed else []) + (
                    ["fixed: " + ", ".join(sorted(curated.fixed))] if curated and curated.fixed else [])
                description = ("%s: " % "; ".join(notes) if notes else "") + " ".join(
                    str(shown.get("description") or "").split())
            except ConfigError as exc:
                description = "refused: %s" % exc
            allowed = {ns: self.plan.left_out(ns, spec, tool["name"], self.hub.separator) is None
                       for ns, entry in self.plan.namespaces.items() if spec.id in entry["servers"]}
            tools.append({"name": tool["name"], "public": public if renamed else tool["name"],
                          "description": description, "schema": shown.get("inputSchema") or {}, "allowed": allowed,
                          "served": self.plan.left_out(None, spec, tool["name"], self.hub.separator) is None,
                          "counters": ["serve pid %(pid)d: %(calls)s calls, %(error)s errors, %(rateLimited)s rate-"
                                       "limited, %(cached)s cached, %(refused)s refused; p50 %(p50Ms)s ms, p90 %(p90Ms)s "
                                       "ms, p99 %(p99Ms)s ms" % dict(snapshot["tools"][public], pid=snapshot["pid"])
                                       for snapshot in running if public in snapshot["tools"]]})
        return {"spec": spec, "launch": self.log.mask(spec.display()), "env": sorted(spec.env),
                "headers": sorted(spec.headers), "tools": tools, "listed": bool(listing)}

    def curated(self, spec, tool):
        """(CuratedTool or None, public name) of `spec`'s listed `tool` as the shown namespace curates it, the
        way serve's tools/list does; ConfigError for an override its schema refuses (serve leaves it out)."""
        layers, public = self.plan.curation(self.shown, spec, tool["name"], self.hub.separator)
        return (CuratedTool(tool, layers, public) if layers else None), public

    def lines(self, server_id):
        """The log panel: the server's stderr and lifecycle lines, and mcpstudio's lines naming it."""
        upstream = self.hub.upstreams.get(server_id)
        own = list(upstream.server_log.lines) if upstream else []
        mentions = [line for line in self.log.lines if "`%s`" % server_id in line or "[%s]" % server_id in line]
        return [mask_secrets(line, self.log.secrets) for line in sorted(own + mentions, key=lambda line: line[:8])]

    # -- actions ------------------------------------------------------------------------------

    def toggle(self, server_id):
        """`t`: start the server (listing its tools and caching them), or stop it."""
        upstream = self.hub.upstreams.get(server_id)
        if not upstream:
            spec = self._spec(server_id)
            self.said = "%s is not usable: %s" % (server_id, "disabled" if spec.disabled else spec.error)
            return None
        if upstream.state in ("running", "starting"):
            self.said = "stopping %s" % server_id
            return self.submit(upstream.stop("stopped from the TUI"))
        self.said = "starting %s" % server_id

        async def start():
            try:
                await upstream.ready(wait_backoff=False)
                self.said = "%s is running: %d tools" % (server_id, len(upstream.listing["tools"]))
            except UpstreamError as exc:
                self.said = exc.message
        return self.submit(start())

    def call(self, server_id, tool, arguments):
        """`c`: call a tool of the server (starting it if needed) by its own name, with `arguments` as the shown
        namespace's schema has them: mapped back as serve maps a client's (CuratedTool.arguments: renamed
        ones back, defaults and fixed values added); the result shows in details."""
        upstream = self.hub.upstreams.get(server_id)
        if not upstream:
            self.said = "%s is not usable" % server_id
            return None
        self.results[(server_id, tool)] = None

        async def call():
            given = arguments
            try:
                await upstream.ready(wait_backoff=False)
                listed = next((t for t in upstream.known_items("tools") if t.get("name") == tool), None)
                curated = self.curated(upstream.spec, listed)[0] if listed else None
                if curated:
                    given = curated.arguments(arguments)
                required = any(t.get("name") == tool and _object(t.get("execution")).get("taskSupport") == "required"
                               for t in upstream.known_items("tools"))
                if required and upstream.tasks.runs(tool):  # a plain call would be refused (-32601): its own task
                    result = await upstream.tasks.call(tool, given, None)
                else:
                    result = await upstream.forward("tools/call", {"name": tool, "arguments": given}, None)
                out = io.StringIO()
                _print_content(result.get("content"), out)
                if result.get("structuredContent") is not None and not out.getvalue():
                    out.write(json.dumps(result["structuredContent"], indent=2))
                text = ("error: " if result.get("isError") else "") + out.getvalue().strip()
            except UpstreamError as exc:
                text = "error: %s" % exc.message
            except ToolError as exc:  # arguments the curated schema refuses, as a client's call gets it
                text = "error: %s" % exc
            except ConfigError as exc:  # an override the tool's schema refuses: serve does not list the tool
                text = "error: refused: %s" % exc
            self.results[(server_id, tool)] = text
            self.said = "%s of %s answered" % (tool, server_id)
        return self.submit(call())

    def edit(self, words):
        """A config edit through the CLI command of the same name (its checks, .bak, symlink, message);
        then the config is read again. False (and `said` why) when the command refused it."""
        out = io.StringIO()
        at = words.index("--") if "--" in words else len(words)  # the options end where a server's command starts
        try:
            with contextlib.redirect_stdout(out):
                _OWN_WORDS[words[0]](words[1:at] + ["--config", self.path] + words[at:])
        except (McpStudioError, OSError) as exc:
            self.said = "refused: %s" % exc
            return False
        self.reload()
        if not self.said.startswith("the config"):
            said = out.getvalue().strip()
            for where in (" in %s", " from %s", " (%s)"):
                said = said.replace(where % self.path, "")
            self.said = said
        return True

    def reload(self):
        """Read the config again; servers whose entry did not change keep running."""
        try:
            self.run(self.hub.reload())
        except (ConfigError, UsageError) as exc:
            self.said = "the config is not usable now: %s" % exc

    def _spec(self, server_id):
        return next(s for s in self.plan.specs if s.id == server_id)

    async def _stop_all(self):
        await asyncio.gather(*(u.stop("the TUI quit") for u in self.hub.upstreams.values()), return_exceptions=True)
        await self.runner.stop_all()

    def close(self):
        """Stop every server the TUI started, and the loop."""
        try:
            self.run(self._stop_all(), timeout=KILL_GRACE * 4 + 10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.runner.close_watchdog()


class TuiScreen:
    """The curses side of the TUI: draws the Board, reads keys (see TUI_KEYS)."""

    text_filter = ""
    view, selected, tool, scroll, follow = "list", 0, 0, 0, True

    def __init__(self, curses, window, board: Board):
        self.curses, self.window, self.board = curses, window, board
        self.colors = {}
        if curses.has_colors():
            try:
                curses.use_default_colors()  # the terminal's own colours, not white on black
            except curses.error:
                pass
        if curses.has_colors() and not os.environ.get("NO_COLOR"):  # https://no-color.org
            for index, (state, color) in enumerate((("running", curses.COLOR_GREEN), ("failed", curses.COLOR_RED),
                                                    ("starting", curses.COLOR_YELLOW), ("error", curses.COLOR_RED),
                                                    ("stopping", curses.COLOR_YELLOW)), 1):
                curses.init_pair(index, color, -1)
                self.colors[state] = curses.color_pair(index)
        try:
            curses.curs_set(0)
        except curses.error:  # a terminal without an invisible cursor
            pass
        window.timeout(TUI_TICK_MS)
        window.keypad(True)
        curses.raw()  # Ctrl+C arrives as a key, whatever SIGINT's disposition (a background job ignores it)

    # -- drawing ------------------------------------------------------------------------------

    def put(self, y, x, text, attr=0):
        """Text clipped to the window (curses raises on the last cell and beyond), by cells: a wide character (CJK,
        most emoji) or a control character (^[) takes two, tabs are spaces, a NUL (which curses refuses) ^@, and
        what does not fit would run on into the next row."""
        height, width = self.window.getmaxyx()
        room, text = width - x - (y == height - 1), text.expandtabs().replace("\0", "^@")  # (the last row: a cell less)
        for end, char in enumerate(text):
            room -= _width(char)
            if room < 0:
                text = text[:end]
                break
        if 0 <= y < height and x < width:
            try:
                self.window.addstr(y, x, text, attr)
            except self.curses.error:
                pass

    def draw(self):
        self.window.erase()
        height, width = self.window.getmaxyx()
        title = "mcpstudio  namespace: %s  %s  %s" % (self.board.shown or "(all)", self.board.count(), self.board.path)
        self.put(0, 0, title[:width], self.curses.A_BOLD)
        getattr(self, "draw_" + self.view)(height, width)
        hint = {"list": "t:test Enter:details l:log e:on/off a:add d:remove n:namespace ?:help q:quit",
                "details": "c:call p:allow/deny t:test l:log Esc:back ?:help q:quit",
                "logs": "f:follow Up/Down:scroll Esc:back q:quit", "help": "Esc:back q:quit"}[self.view]
        self.put(height - 2, 0, self.board.said[:width - 1])
        self.put(height - 1, 0, hint, self.curses.A_REVERSE)
        self.window.refresh()

    def current(self):
        rows = self.board.rows(self.text_filter)
        self.selected = min(self.selected, max(0, len(rows) - 1))
        return rows[self.selected] if rows else None

    def draw_list(self, height, width):
        rows = self.board.rows(self.text_filter)
        self.put(1, 0, "SERVER             KIND    ON  STATE     TOOLS  NAMESPACES     LAST ERROR", self.curses.A_UNDERLINE)
        if self.text_filter:
            self.put(1, width - 20, ("/" + self.text_filter)[:19].ljust(20))
        if not rows:
            self.put(3, 2, "no servers%s; a adds one" % (" match /" + self.text_filter if self.text_filter else ""))
        self.current()
        top = max(0, self.selected - (height - 6))
        for index, row in enumerate(rows[top:top + height - 4]):
            line = "%s %-7s %-3s %-9s %5s  %s %s" % (
                _cells(row["name"], 18), row["transport"], "yes" if row["enabled"] else "no", row["state"],
                "-" if row["tools"] is None else row["tools"], _cells(",".join(row["namespaces"]) or "-", 14),
                row["error"])
            attr = self.curses.A_REVERSE if index + top == self.selected else 0
            self.put(2 + index, 0, line.ljust(width)[:width], attr)
            if attr == 0 and row["state"] in self.colors:
                self.put(2 + index, 31, "%-9s" % row["state"], self.colors[row["state"]])

    def draw_details(self, height, width):
        row = self.current()
        if row is None:
            self.view = "list"
            return
        details = self.board.details(row["id"])
        lines = [("%s  (%s, %s)" % (row["name"], row["state"], "enabled" if row["enabled"] else "disabled"), self.curses.A_BOLD),
                 ("%s %s" % ("url:" if details["spec"].url else "command:", details["launch"]), 0)]
        lines += [("%s: %s" % (kind, ", ".join(key + shown for key in details[kind])), 0)
                  for kind, shown in (("env", "=***"), ("headers", ": ***")) if details[kind]]
        if row["error"]:
            import textwrap
            lines.extend((text, self.colors.get("failed", 0))
                         for text in textwrap.wrap("last error: %s" % row["error"], max(20, width - 1))[:6])
        tools = details["tools"]
        self.tool = min(self.tool, max(0, len(tools) - 1))
        lines.append(("tools (%d)%s" % (len(tools), ":" if details["listed"] else ": not listed yet; t starts it"), self.curses.A_UNDERLINE))
        shown, selected, end = self.board.shown, 0, 0
        for index, tool in enumerate(tools):
            permission = "hidden" if not tool["served"] else "-" if shown not in tool["allowed"] else (
                "allowed" if tool["allowed"][shown] else "denied")
            marks = " ".join("%s:%s" % (ns, "+" if ok else "-") for ns, ok in tool["allowed"].items())
            text = "  %-28s %-8s %-22s %s" % (_clip(tool["public"], 28), permission, _clip(marks, 22), tool["description"])
            lines.append((text, self.curses.A_REVERSE if index == self.tool else 0))
            if index == self.tool:  # its counters and last call under it, in view with it
                selected = len(lines) - 1
                lines.extend((text, 0) for text in tool["counters"])
                result = self.board.results.get((row["id"], tool["name"]), "")
                if result is None:
                    lines.append(("calling %s ..." % tool["public"], 0))
                elif result:
                    lines.append(("result of %s:" % tool["public"], self.curses.A_UNDERLINE))
                    lines.extend((text, 0) for text in result.splitlines()[:8])
                end = len(lines) - 1
        top = max(0, min(selected, end - (height - 5)))
        for index, (text, attr) in enumerate(lines[top:top + height - 3]):
            self.put(1 + index, 0, text, attr)

    def draw_logs(self, height, width):
        row = self.current()
        lines = self.board.lines(row["id"]) if row else []
        room = height - 4  # rows 2 to height - 3
        self.scroll = max(0, len(lines) - room if self.follow else min(self.scroll, len(lines) - room))
        self.put(1, 0, "log of %s%s" % (row["name"] if row else "?", "  (following)" if self.follow else ""),
                 self.curses.A_UNDERLINE)
        for index, line in enumerate(lines[self.scroll:self.scroll + room]):
            self.put(2 + index, 0, line)
        if not lines:
            self.put(2, 2, "nothing yet: t starts the server")

    def draw_help(self, height, width):
        for index, (key, what) in enumerate(TUI_KEYS):  # (each fits 80 columns)
            self.put(1 + index, 0, "  %-12s %s" % (key, what))

    # -- input --------------------------------------------------------------------------------

    def ask(self, prompt, initial=""):
        """A line typed on the status line (Enter: done, Esc: None); the screen stays live meanwhile."""
        text = initial
        while True:
            self.draw()
            height, width = self.window.getmaxyx()
            self.put(height - 2, 0, (prompt + text + "_").ljust(width - 1)[-(width - 1):], self.curses.A_BOLD)
            self.window.refresh()
            try:
                key = self.window.get_wch()  # a character (any script) or a special key's number
            except self.curses.error:  # no key within the tick
                continue
            if key in ("\n", "\r", self.curses.KEY_ENTER):
                return text
            if key in ("\x1b", "\x03"):
                return None
            if key in ("\x08", "\x7f", self.curses.KEY_BACKSPACE):
                text = text[:-1]
            elif isinstance(key, str) and key.isprintable():
                text += key

    def key(self, key):
        """Handle one key; False to quit."""
        char = chr(key) if 0 <= key < 256 else ""
        board, row = self.board, self.current()
        step = {self.curses.KEY_DOWN: 1, ord("j"): 1, self.curses.KEY_UP: -1, ord("k"): -1}.get(key)
        if char in ("q", "\x03"):  # q, Ctrl+C
            return False
        if key == 27:
            self.view = "list"
        elif char == "?":
            self.view = "help"
        elif step:
            if self.view == "details":
                self.tool = max(0, self.tool + step)
            elif self.view == "logs":
                self.follow, self.scroll = False, max(0, self.scroll + step)
            else:
                self.selected = max(0, self.selected + step)
        elif char == "/" and self.view == "list":
            text = self.ask("filter: ", self.text_filter)
            self.text_filter = self.text_filter if text is None else text
        elif key in (10, 13, self.curses.KEY_ENTER) and row:
            self.view, self.tool = "details", 0
        elif char == "l" and row:
            self.view, self.follow = "logs", True
        elif char == "f" and self.view == "logs":
            self.follow = not self.follow
        elif char == "t" and row:
            board.toggle(row["id"])
        elif char == "e" and row:
            board.edit(["disable" if row["enabled"] else "enable", row["name"]])
        elif char == "a":
            self.add()
        elif char == "d" and row:
            if (self.ask("remove %s from the config? (y/n) " % row["name"]) or "").lower().startswith("y"):
                board.edit(["remove", row["name"]])
            else:
                board.say("kept %s" % row["name"])
        elif char == "n" and row:
            self.namespaces(row)
        elif char == "r":
            board.reload()
            if not board.said.startswith("the config"):
                board.say("read %s again" % board.path)
        elif char in ("c", "p") and row and self.view == "details":
            tools = board.details(row["id"])["tools"]
            if not tools:
                board.say("no tools listed yet: t starts the server")
            elif char == "c":
                arguments = ask_fields(tools[self.tool]["schema"], self.ask)
                if arguments is not None:
                    board.call(row["id"], tools[self.tool]["name"], arguments)
            elif not board.shown:
                board.say("no namespace shown: n creates one or chooses which")
            else:
                board.edit(["namespace", "deny" if tools[self.tool]["allowed"].get(board.shown) else "allow", board.shown, row["name"], tools[self.tool]["name"]])
        return True

    def add(self):
        name = self.ask("add server, name: ")
        if not name:
            return
        if any(row["name"] == name for row in self.board.rows()):
            self.board.say("refused: a server %s exists (d removes it first)" % name)
            return
        target = self.ask("%s: command (with its arguments) or URL: " % name)
        if not target:
            return
        import shlex
        try:
            words = ["--url", target] if re.match(r"https?://", target) else ["--"] + shlex.split(target)
        except ValueError as exc:
            self.board.say("refused: %s" % exc)
            return
        self.board.edit(["add", name] + words)

    def namespaces(self, row):
        choice = (self.ask("namespace: c create, a assign %s, d make default, s show: " % row["name"]) or "-")[0]
        if choice not in "cads":
            return
        name = self.ask({"c": "new namespace (with %s): " % row["name"], "a": "assign %s to namespace: " % row["name"],
                         "d": "make this namespace the default: ", "s": "show namespace: "}[choice])
        if not name:
            return
        if choice == "s":
            self.board.show(name)
            return
        action = {"c": "add", "a": "assign", "d": "default"}[choice]
        self.board.edit(["namespace", action, name] + ([row["name"]] if action != "default" else []))

    def run(self):
        while True:
            self.draw()
            key = self.window.getch()
            if key == self.curses.KEY_RESIZE:  # repaint it all: the terminal may have moved what was on it
                self.window.clear()
            elif key != -1 and not self.key(key):
                return


def tui_command(words):
    """`tui [--config FILE] [--namespace NAME]`: the TUI, on a terminal only."""
    found, path, rest = _config_option(words, "tui", values=("--namespace",))
    if rest:
        raise UsageError("tui takes --config FILE and --namespace NAME only, not %r" % " ".join(rest))
    try:  # first: a terminal would not help a Python without it (Windows CPython has none)
        import curses
    except ImportError:
        _say("error: tui needs Python's curses module (on Windows: pip install windows-curses, or run mcpstudio "
             "under WSL); use `mcpstudio status` or `mcpstudio list` instead")
        return 2
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        _say("error: tui needs a terminal (stdin and stdout); use `mcpstudio status` or "
             "`mcpstudio list` instead")
        return 2
    if not os.path.exists(path):
        raise UsageError("tui: no config at %s (give --config FILE, or add a server: mcpstudio add NAME -- COMMAND)"
                         % path)
    os.environ.setdefault("ESCDELAY", "25")  # Esc is a key here: ncurses waits a second by default to tell it
    board = Board(path, found.get("--namespace"))
    try:
        curses.wrapper(lambda window: TuiScreen(curses, window, board).run())
    except KeyboardInterrupt:  # Ctrl+C: curses.wrapper has restored the terminal
        pass
    finally:
        board.close()
    return 0


# --------------------------------------------------------------------------
# main: the one entry point, its subcommands and modes
# --------------------------------------------------------------------------

# Subcommands that read their own words; serve, check and status take mcpstudio's options.
_OWN_WORDS = {"init": init_config, "inspect": inspect_command, "call": call_command, "install": install_command,
              "import": import_command, "add": add_command, "remove": remove_command, "list": list_command,
              "namespace": namespace_command, "zipapp": zipapp_command, "login": login_command,
              "logout": logout_command, "enable": enable_command, "disable": disable_command, "tui": tui_command,
              "secrets": secrets_command}
SUBCOMMANDS = ("serve", "check", "status") + tuple(_OWN_WORDS)


def _as_run(text):
    """`text` with each command it suggests (`mcpstudio init ...`) spelled as the user ran us
    (`python3 mcpstudio.py init ...`), so it can be pasted as it is."""
    prog = _prog()
    if prog == "mcpstudio":
        return text
    return re.sub(r"(?<![\w/.`-])mcpstudio (?=(?:%s|echo)\b)" % "|".join(SUBCOMMANDS), lambda m: prog + " ", text)


def _terminal_hint(argv, server):
    """What stdio mode says on stderr when a person, not a client, started it in a terminal."""
    words = _argv_text(argv)
    sources = server.catalog.sources
    names = [name for source in sources if isinstance(source, TemplateTools) for name in source.tools]
    known = len(names) == 1 and all(isinstance(source, (TemplateTools, OutputStore)) for source in sources)
    return ("mcpstudio: serving %s over stdio: waiting for an MCP client's JSON-RPC messages on stdin.\n"
            "  see its tools:   %s inspect %s\n"
            "  call %s %s call %s key=value ... %s\n"
            "  add to a client: %s install --client claude-code %s\n"
            "  %s or Ctrl+C stops.\n" % (server.title, _prog(), words, "it:        " if known else "one:       ", _prog(),
                                         _argv_text(names) if known else "TOOL", words, _prog(), words, _END_OF_INPUT))


def main(argv=None):
    """Run mcpstudio with `argv` (default: sys.argv[1:]); return the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    _text_stdout()
    _drop_entry_env()
    try:
        options, words = parse_command_line(argv)
        before = argv[:len(argv) - len(words)]  # mcpstudio's options, written before the subcommand
        ended = before[-1:] == ["--"]  # `-- check` runs a command named check
        command = words[0] if words and words[0] in SUBCOMMANDS and not ended else None
        if command in _OWN_WORDS:
            if words[1:2] in (["-h"], ["--help"]) or options["help"]:
                print(SUBCOMMAND_HELP[command])
                return 0
            if before and command in ("call", "inspect"):  # options of the server it starts
                return _OWN_WORDS[command](words[1:], server_options=before)
            if before:
                raise UsageError("%s before %s: %s reads only its own options, written after it (see %s %s --help)"
                                 % (_argv_text(before), command, command, _prog(), command))
            return _OWN_WORDS[command](words[1:])
        if command:
            options, words = parse_command_line(words[1:], options)
            if words:
                hint = (" (did you mean %s --config %s?)" % (command, words[0])
                        if words[0].endswith((".json", ".jsonc")) else "; a template goes in the config file")
                raise UsageError("%s takes options only, not %r%s" % (command, " ".join(words), hint))
        if options["help"]:
            print(SUBCOMMAND_HELP[command] if command else help_text())
            return 0
        if options["version"]:
            print("mcpstudio %s" % __version__)
            return 0
        config = options["config"]
        if config is None and command is not None and not (command == "check" and options["skills"]):
            config = default_config_path()
            if not os.path.exists(config):
                raise UsageError("%s needs --config FILE (or a config at %s; create one with: "
                                 "mcpstudio init NAME --command CMD -o %s)" % (command, config, _argv_text([config])))
        if not words and not options["root_directory"] and not options["skills"] and config is None \
                and options["url"] is None:
            raise UsageError("no command given; e.g. mcpstudio echo \"{message}\" (see --help)")
        secrets = [value for key, value in _key_values(options["env"], "--env").items() if looks_secret(key)]
        level = (options["log_level"] or "info").lower()
        level = {"warn": "warning"}.get(level, level)
        if level not in ("debug", "info", "warning", "error"):
            raise UsageError("--log-level %s: use debug, info, warn or error" % options["log_level"])
        log = Log(debug=bool(options["debug"]), path=options["log"], secrets=secrets, level=level)
        if command == "check":
            return check_config(config, log, options)
        if command == "status":
            return status_command(config, log, options)
        server, runner = _build_server(options, words, log, config, publish=True)
    except HelpRequested as exc:
        print(SUBCOMMAND_HELP[exc.args[0]])
        return 0
    except ChildRefused as exc:  # inspect or call of a mode mcpstudio refuses: it said why
        return exc.args[0]
    except UsageError as exc:
        _say("error: %s\n%s" % (_as_run(str(exc)), USAGE))
        return 2
    except TemplateError as exc:
        _say("error: bad template: %s" % exc)
        return 2
    except McpStudioError as exc:  # a bad config, an MCP error, a file that cannot be written
        _say("error: %s" % _as_run(str(exc)))
        return 1
    except KeyboardInterrupt:  # inspect or call stopped by the user; their child is stopped already
        return 130
    except BrokenPipeError:  # `mcpstudio check | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        _say("error: %s" % exc)
        return 1
    log.debug("mcpstudio %s on Python %s: %s", __version__, sys.version.split()[0], server.title)
    if options["http"] is not None:
        return run_http(server, runner, log, options, lambda name: _build_server(
            dict(options, namespace=name), words, log, config, runner, primary=server)[0])
    if os.isatty(0):
        sys.stderr.write(_terminal_hint(argv, server))
    protocol_fd = _claim_stdout()
    try:
        return asyncio.run(serve_stdio(server, runner, log, 0, protocol_fd))
    except KeyboardInterrupt:  # Windows: Ctrl+C arrives as an exception, and children
        asyncio.run(runner.stop_all())  # in their own process groups never see it
        return 0
    finally:
        log.close()


if __name__ == "__main__":
    sys.exit(main())
