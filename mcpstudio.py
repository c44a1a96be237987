#!/usr/bin/env python3
"""mcpstudio: turn the commands you already have into MCP tools.

One standard-library module that serves the Model Context Protocol over stdio.
A command template becomes one tool whose JSON schema comes from its fields:

    python3 mcpstudio.py echo "{message}"
    python3 mcpstudio.py git log [--oneline] -n "{limit}" -- "{path # file to inspect}"
    python3 mcpstudio.py --help

The shell is never involved: a template is parsed once into words, and every
call renders those words into an argv list that is executed directly.

The module reads top to bottom; each section uses only what stands above it:
errors, schema validation, naming, templates, processes, the JSON-RPC session
and stdio transport, tool sources, the catalog, the MCP server, and the
command line (`main`).
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
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

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
    "TemplateTools",
    "Catalog",
    "Server",
    "ScriptDirectory",
    "CommandTemplate",
    "ConfigError",
    "ConfigLoader",
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

DEFAULT_TIMEOUT = 60.0          # seconds a tool call may run
DEFAULT_MAX_OUTPUT = 1 << 20    # bytes kept of each of stdout and stderr
DEFAULT_MAX_CONCURRENCY = 32    # commands running at once
DEFAULT_MAX_NAME_LENGTH = 48    # leaves room for a client prefix such as mcp__<server>__
KILL_GRACE = 2.0                # seconds between SIGTERM and SIGKILL
EOF_DRAIN = 2.0                 # seconds in-flight calls may finish after stdin closes
PIPE_LINGER = 0.1               # seconds to drain pipes after the command itself exited
PROGRESS_INTERVAL = 1.0         # seconds between progress notifications
PAGE_SIZE = 100                 # items per tools/list page
MAX_MESSAGE = 256 << 20         # bytes of one incoming message; a larger one is skipped
HELP_TIMEOUT = 10.0             # seconds a script's --help (or --state) may take
RESCAN_INTERVAL = 2.0           # seconds between looks for added, changed or removed scripts

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002      # handshake era; 2026-07-28 uses -32602
HEADER_MISMATCH = -32020         # 2026-07-28 over HTTP: a header disagrees with the body
UNSUPPORTED_VERSION = -32022     # 2026-07-28: `_meta` names a version this server does not serve


# --------------------------------------------------------------------------
# Sections compiled on first use
# --------------------------------------------------------------------------
# `python3 mcpstudio.py` compiles the whole file at every start (Python never
# caches a script's bytecode): about 7 microseconds a line on a small machine,
# the biggest part of a cold start. So the subsystems only some modes use
# (script folders, config files) stay in their place below as source text and
# are compiled the first time a mode needs them, under this file's name and
# line numbers, so tracebacks and debuggers point at the real lines. Template
# mode compiles only the core. `mcpstudio.ConfigLoader` and the like compile
# their section on access, so importers never notice.

_SECTIONS = {}  # name -> (source, sections it needs), until compiled
_SECTIONS_LOCK = threading.RLock()


def _section(name: str, source: str, requires=()):
    """Keep a section's source, to compile when `_need(name)` first asks for it."""
    _SECTIONS[name] = (source, requires)


def _need(*names):
    """Compile and run these sections (and what they need) into this module, once."""
    with _SECTIONS_LOCK:
        for name in names:
            entry = _SECTIONS.get(name)
            if entry is None:
                continue
            source, requires = entry
            _need(*requires)
            filename = globals().get("__file__") or "<mcpstudio>"
            try:  # the loader reads plain files and zipapps alike
                loader = globals().get("__loader__")
                text = loader.get_source(__name__) if loader is not None else None
                if text is None:
                    with open(filename, encoding="utf-8") as f:
                        text = f.read()
                first_line = text.count("\n", 0, text.index(source)) + 1
            except (OSError, ValueError, ImportError):
                first_line = 1
            exec(compile("\n" * (first_line - 1) + source, filename, "exec"), globals())
            del _SECTIONS[name]  # only once it ran to the end


def __getattr__(name: str):
    """A name defined in a section not compiled yet compiles it (PEP 562)."""
    if not name.startswith("__"):
        for section in list(_SECTIONS):
            _need(section)
            if name in globals():
                return globals()[name]
        if name in globals():  # another thread compiled it meanwhile
            return globals()[name]
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------

class McpStudioError(Exception):
    """Base class of every error mcpstudio raises on purpose."""


class UsageError(McpStudioError):
    """A mistake on the command line: printed as `mcpstudio: error: ...`, exit 2."""


class TemplateError(McpStudioError):
    """A mistake in a command template, found when it is parsed (the author's mistake).

    `word` is the template word (0-based) and `template` the whole template,
    so the message can point at the place.
    """

    def __init__(self, message: str, word: int | None = None, template: list | None = None):
        self.word = word
        self.template = template
        if word is not None and template is not None:
            message = "%s (in word %d, %r)" % (message, word + 1, template[word])
        super().__init__(message)


class McpError(McpStudioError):
    """A JSON-RPC error to send back: only the server's dispatcher turns it into one."""

    def __init__(self, code: int, message: str, data=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict:
        error = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ToolError(McpStudioError):
    """A tool call that cannot go ahead (the caller's mistake): becomes an `isError` result."""


class ConfigError(McpStudioError):
    """A mistake in a config file; the message names the file and where in it."""


# --------------------------------------------------------------------------
# Schema validation: the one JSON Schema checker (the subset tools use)
# --------------------------------------------------------------------------

_JSON_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def _type_name(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _is_type(value, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _JSON_TYPES.get(name, ()))


def validate(value, schema: dict, where: str = "") -> list:
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
            errors.append("%s must be at least %d characters long" % (label, schema["minLength"]))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append("%s must be at most %d characters long" % (label, schema["maxLength"]))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append("%s must match the pattern %s" % (label, schema["pattern"]))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append("%s must be at least %s" % (label, schema["minimum"]))
        if "maximum" in schema and value > schema["maximum"]:
            errors.append("%s must be at most %s" % (label, schema["maximum"]))
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append("%s must be more than %s" % (label, schema["exclusiveMinimum"]))
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            errors.append("%s must be less than %s" % (label, schema["exclusiveMaximum"]))
    elif isinstance(value, (list, tuple)):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append("%s must have at least %d item%s" % (
                label, schema["minItems"], "" if schema["minItems"] == 1 else "s"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append("%s must have at most %d items" % (label, schema["maxItems"]))
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
            if name in properties:
                errors.extend(validate(item, properties[name], "`%s%s`" % (prefix, name)))
            elif extra is False:
                errors.append("`%s%s` is not a known argument" % (prefix, name))
            elif isinstance(extra, dict):
                errors.extend(validate(item, extra, "`%s%s`" % (prefix, name)))
    return errors


# --------------------------------------------------------------------------
# Naming: one function makes every public name safe for strict clients
# --------------------------------------------------------------------------

_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def safe_name(name: str, max_length: int = DEFAULT_MAX_NAME_LENGTH, taken=()) -> str:
    """Return `name` as a tool name strict clients accept: `^[A-Za-z0-9_-]{1,max_length}$`.

    Other characters become `_`. A name that is too long, or already in
    `taken`, is cut and given `_` plus six hex digits of a hash of the
    original, so the result is deterministic and distinct.
    """
    clean = _UNSAFE_NAME_CHARS.sub("_", name) or "tool"
    if len(clean) <= max_length and clean not in taken:
        return clean
    import hashlib  # only shortening needs it; keeps startup lean
    salt = 0
    while True:
        seed = name if salt == 0 else "%s#%d" % (name, salt)
        suffix = "_" + hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:6]
        candidate = clean[: max(1, max_length - len(suffix))] + suffix
        if candidate not in taken:
            return candidate
        salt += 1


def match_spellings(arguments: dict, keys) -> dict:
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


# --------------------------------------------------------------------------
# Templates: parse once, describe as a JSON schema, render to argv
# --------------------------------------------------------------------------

_FIELD_NAME = r"[A-Za-z_][A-Za-z0-9_-]*"
_FIELD = re.compile(
    r"\{\{(?P<n2>%(n)s)(?P<a2>\.\.\.)?\s*(?:\#\s*(?P<d2>[^{}]*?))?\s*\}\}"
    r"|\{(?P<n1>%(n)s)(?P<a1>\.\.\.)?\s*(?:\#\s*(?P<d1>[^{}]*?))?\s*\}"
    r"|\[(?P<flag>--?%(n)s)\s*(?:\#\s*(?P<df>[^\[\]]*?))?\s*\]"
    r"|\[(?P<n3>%(n)s)(?P<a3>\.\.\.)?\s*(?:\#\s*(?P<d3>[^\[\]]*?))?\s*\]"
    % {"n": _FIELD_NAME}
)
_ESCAPABLE = "{}[]\\"
_FIELD_START = re.compile(r"[{\[]\{?(%s)(?:\.\.\.)?\s*#" % _FIELD_NAME)  # a field with a description begins
_NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


class Field:
    """One named placeholder of a template.

    `kind` is "string", "array" or "boolean"; `key` is the schema property
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

    def schema(self) -> dict:
        if self.kind == "array":
            prop = {"type": "array", "items": {"type": "string"}}
            if self.required:
                prop["minItems"] = 1
        elif self.kind == "boolean":
            prop = {"type": "boolean", "default": False}
        else:
            prop = {"type": "string"}
        if self.description:
            prop["description"] = self.description
        return prop


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

    def __init__(self, words: list):
        if not words:
            raise TemplateError("the template is empty: give a command, e.g. echo \"{message}\"")
        self.source = list(words)
        self.words = []          # each word: a list of str and Field pieces
        self.fields = {}         # key -> Field, merged over every use
        for index, word in enumerate(words):
            self.words.append(self._parse_word(word, index))
        if any(not isinstance(p, str) for p in self.words[0]):
            raise TemplateError("the command (the first word) must be literal text, never a field", 0, self.source)
        check_code_fields(self.words, self.source)

    def _parse_word(self, word: str, index: int, in_group: bool = False) -> list:
        pieces, text, i = [], [], 0
        while i < len(word):
            char = word[i]
            if char == "\\" and i + 1 < len(word) and word[i + 1] in _ESCAPABLE:
                text.append(word[i + 1])
                i += 2
                continue
            piece, end = None, i
            if char in "{[":
                match = _FIELD.match(word, i)
                if match:
                    piece, end = self._field(match, index, in_group), match.end()
                elif _FIELD_START.match(word, i):
                    raise self._bad_description(word, i, index)
                elif char == "[":
                    close = _closing_bracket(word, i)
                    if close:
                        inner = self._parse_word(word[i + 1:close], index, True)
                        if any(not isinstance(p, str) for p in inner):
                            piece, end = Group(inner), close + 1
            if piece is None:
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

    def _bad_description(self, text: str, at: int, index: int) -> TemplateError:
        name = _FIELD_START.match(text, at).group(1)
        return TemplateError("the field `%s` is not closed, or its description contains { } [ or ], "
                             "which a description may not" % name, index, self.source)

    def _field(self, match, index: int, optional: bool = False) -> Field:
        group = match.groupdict()
        if group["flag"]:
            flag = group["flag"]
            field = Field(flag.lstrip("-"), "boolean", False, group["df"], flag)
        else:
            for n, required in (("1", True), ("2", True), ("3", False)):
                if group["n" + n]:
                    kind = "array" if group["a" + n] else "string"
                    field = Field(group["n" + n], kind, required and not optional, group["d" + n],
                                  in_group=optional)
                    break
        known = self.fields.get(field.key)
        if known is None:
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

    def input_schema(self) -> dict:
        """The JSON schema of the arguments, one property per field."""
        schema = {
            "type": "object",
            "properties": {key: f.schema() for key, f in self.fields.items()},
            "additionalProperties": False,
        }
        required = [key for key, f in self.fields.items() if f.required]
        if required:
            schema["required"] = required
        return schema

    def display(self) -> str:
        """The template as a person reads it, without field descriptions."""
        out = []
        for pieces in self.words:
            word = "".join(_piece_text(p) for p in pieces)
            out.append(word if word and not re.search(r"\s", word) else json.dumps(word))
        return " ".join(out)

    def command_name(self) -> str:
        """The base name of the command word: `/usr/bin/git-lfs` gives `git-lfs`."""
        first = "".join(p for p in self.words[0] if isinstance(p, str))
        base = re.split(r"[\\/]", first)[-1]
        stem, ext = os.path.splitext(base)
        return (stem if stem and ext else base) or "command"

    # -- calls ------------------------------------------------------------------

    def normalize(self, arguments: dict) -> dict:
        """Accept `my-var` for `my_var`: return the arguments under schema keys."""
        return match_spellings(arguments, self.fields)

    def render(self, arguments: dict, allow_dash_values: bool = False, honour_double_dash: bool = True) -> list:
        """Render validated `arguments` to an argv list (no shell, no re-substitution).

        Raises ToolError when a scalar value would begin an argument with `-`
        (it would be read as an option) and the template has no `--` before it.
        """
        return render_words(self.words, arguments, allow_dash_values, self.command_name(), honour_double_dash)


# Interpreters whose next argument after these flags is code: a value pasted
# there could run anything, so a field may not stand in it.
_CODE_FLAGS = {
    "sh": ("-c",), "bash": ("-c",), "dash": ("-c",), "zsh": ("-c",), "ksh": ("-c",), "ash": ("-c",),
    "fish": ("-c", "--command"), "python": ("-c",), "python3": ("-c",), "pypy3": ("-c",),
    "node": ("-e", "--eval", "-p", "--print"), "deno": ("eval",), "perl": ("-e", "-E"), "ruby": ("-e",),
    "php": ("-r",), "osascript": ("-e",), "pwsh": ("-c", "-command"), "powershell": ("-c", "-command"),
    "cmd": ("/c", "/k"),
}


def check_code_fields(words: list, source) -> None:
    """Refuse a field inside the code an interpreter runs (`sh -c '... {x} ...'`).

    Values there would be code, not data; they belong in separate arguments
    (`sh -c 'echo "$1"' sh {x}`) or a config tool with "shell": true.
    """
    command = os.path.basename("".join(p for p in words[0] if isinstance(p, str))).lower()
    command = re.sub(r"(\.exe|[0-9.]+)$", "", command) if command not in _CODE_FLAGS else command
    flags = _CODE_FLAGS.get(command, ())
    for before, word in zip(words, words[1:]):
        text = "".join(p for p in before if isinstance(p, str)).lower()
        short = text.startswith("-") and not text.startswith("--") and "c" in text[1:] and command in (
            "sh", "bash", "dash", "zsh", "ksh", "ash")  # -ec, -lc ...
        if (text in flags or short) and any(not isinstance(p, str) for p in word):
            field = next(p for p in word if not isinstance(p, str))
            name = field.name if isinstance(field, Field) else field.fields[0].name
            raise TemplateError(
                "`%s` stands inside the code `%s %s` runs, so a value could run any command. Pass values "
                "as their own arguments (sh -c 'echo \"$1\"' sh {%s}), or in a config file use \"shell\": true"
                % (name, command, text, name), None, None)


def render_words(words: list, arguments: dict, allow_dash_values: bool, command: str,
                 honour_double_dash: bool = True) -> list:
    """Render parsed words (lists of pieces) to argv; see Template.render.

    `honour_double_dash=False` keeps the dash guard on after a `--` word (a
    shell script may hold several commands, and `--` ends only one's options).
    """
    argv = []
    after_double_dash = False
    for pieces in words:
        if len(pieces) == 1 and isinstance(pieces[0], Field) and pieces[0].kind == "array":
            argv.extend(_text(v) for v in arguments.get(pieces[0].key) or ())
            continue
        parts = []
        lead, present = _render_pieces(pieces, arguments, parts)
        if not present:
            continue  # nothing in the word was given: the word goes
        word = "".join(parts)
        if (isinstance(lead, Field) and word.startswith("-") and not after_double_dash
                and not allow_dash_values and not _NUMBER.fullmatch(word)):
            value = _clip(arguments[lead.key], 40)
            raise ToolError("`%s` starts with '-' (%r), so the command would read it as an option, not as "
                            "a value. Pass a value that does not start with '-' (a path can be written ./%s)."
                            % (lead.key, value, value))
        if pieces == ["--"] and honour_double_dash:
            after_double_dash = True
        argv.append(word)
    return argv


def _text(value) -> str:
    """A value as command-line text: JSON spelling for booleans and null."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return str(value)


class Group:
    """An optional piece of a word, such as `[--voice={voice}]`."""

    __slots__ = ("pieces", "fields")

    def __init__(self, pieces: list):
        self.pieces = pieces
        self.fields = [p for p in pieces if isinstance(p, Field)] + [
            f for p in pieces if isinstance(p, Group) for f in p.fields]

    def given(self, arguments: dict) -> bool:
        for field in self.fields:
            value = arguments.get(field.key)
            if value is None or value is False or (field.kind == "array" and not value):
                return False
        return True


def _render_pieces(pieces: list, arguments: dict, parts: list) -> tuple:
    """Append the rendering of `pieces` to `parts`.

    Returns (lead, present): `lead` is what begins the text ("text", a flag or
    array marker, or the string Field whose value comes first; None if
    nothing), `present` whether any literal text or given value was there
    (False also when a `{field}` written with braces was not given: its
    whole word goes, rather than leaving half an argument).
    """
    lead, present = None, False
    for piece in pieces:
        if isinstance(piece, str):
            parts.append(piece)
            lead, present = lead or "text", True
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
            elif value is not None:
                value = _text(value)
                parts.append(value)
                present = True
                if lead is None and value:
                    lead = piece
    return lead, present


def _closing_bracket(word: str, start: int) -> int:
    """Index of the `]` that closes the `[` at `start` (0 if none)."""
    depth, i = 0, start
    while i < len(word):
        char = word[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return 0


def _piece_text(piece, in_group: bool = False) -> str:
    if isinstance(piece, str):  # re-escape literal text that would read as a field
        if piece.endswith("\\"):
            piece += "\\"  # a field follows: keep the backslash from escaping it
        return _FIELD.sub(lambda m: "\\" + m.group(), piece) if "{" in piece or "[" in piece else piece
    if isinstance(piece, Group):
        return "[%s]" % "".join(_piece_text(p, True) for p in piece.pieces)
    if in_group and piece.kind != "boolean":
        return "{%s%s}" % (piece.name, "..." if piece.kind == "array" else "")
    return _field_text(piece)


def _article(kind: str) -> str:
    return "an" if kind[0] in "aeiou" else "a"


def _field_text(field: Field) -> str:
    if field.kind == "boolean":
        return "[%s]" % field.flag
    dots = "..." if field.kind == "array" else ""
    return ("{%s%s}" if field.required else "[%s%s]") % (field.name, dots)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------
# Processes: the one way a child process starts
# --------------------------------------------------------------------------
# The one platform check. POSIX: each child leads a new session (its own
# process group, no controlling terminal), so a timeout, a cancellation or
# shutdown can stop it together with everything it started. Windows: a new
# process group, CTRL_BREAK_EVENT, then `taskkill /T /F`; leftovers of a
# command that already exited cannot be found there. Only Linux is tested in
# CI; macOS takes the POSIX path.

if _POSIX:
    _SPAWN_OPTIONS = {"start_new_session": True}

    def _signal_group(pid: int, hard: bool) -> bool:
        """Signal the process group `pid` leads; False when nothing is left in it."""
        try:
            os.killpg(pid, signal.SIGKILL if hard else signal.SIGTERM)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def _group_alive(pid: int) -> bool:
        try:
            os.killpg(pid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def _is_executable(path: str) -> bool:
        return os.access(path, os.X_OK)

    def _writable_now(fd: int) -> bool:
        """Whether a write of up to PIPE_BUF bytes to `fd` would complete without blocking."""
        import select
        try:
            return bool(select.select([], [fd], [], 0)[1])
        except (OSError, ValueError):
            return False

    def _on_stop_signals(loop, stop, reload=None):
        """Call `stop(name)` on SIGTERM, SIGINT or SIGHUP; `reload()` on SIGHUP when given."""
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, stop, signal.Signals(signum).name)
        if reload is not None:
            loop.add_signal_handler(signal.SIGHUP, reload)

    # A parent-death signal reaches only direct children, and nothing runs in
    # a process killed with SIGKILL; so a tiny separate process holds a pipe
    # from us, learns each process group we start ("+pid" / "-pid"), and when
    # the pipe closes (we exited or were killed) stops every group still
    # registered: SIGTERM, the grace period, SIGKILL.
    _WATCHDOG = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
groups = set()
for line in sys.stdin.buffer:
    try:
        (groups.add if line[:1] == b"+" else groups.discard)(int(line[1:]))
    except ValueError:
        pass
def signal_all(signum):
    left = [pid for pid in groups if not _try(os.killpg, pid, signum)]
    return left
def _try(call, *args):
    try:
        call(*args)
    except OSError:
        return True
deadline = time.monotonic() + float(sys.argv[1])
if signal_all(signal.SIGTERM):
    while signal_all(0) and time.monotonic() < deadline:
        time.sleep(0.05)
    signal_all(signal.SIGKILL)
"""

    def _start_watchdog(grace: float):
        """Start the watchdog; return its stdin (a binary file), or None if it cannot run."""
        if not sys.executable:
            return None
        watchdog = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(grace)], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        return watchdog
else:
    _SPAWN_OPTIONS = {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}

    def _signal_group(pid: int, hard: bool) -> bool:
        try:
            if hard:
                subprocess.run(["taskkill", "/T", "/F", "/PID", str(pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            else:
                os.kill(pid, signal.CTRL_BREAK_EVENT)
            return True
        except OSError:
            return False

    def _group_alive(pid: int) -> bool:
        return False  # Windows cannot poll a group; taskkill /T at stop time is all there is

    def _is_executable(path: str) -> bool:
        extensions = os.environ.get("PATHEXT", ".COM;.EXE;.BAT;.CMD").lower().split(";")
        return os.path.splitext(path)[1].lower() in extensions

    def _writable_now(fd: int) -> bool:
        return False  # select() cannot poll pipes on Windows: every write goes through the thread

    def _on_stop_signals(loop, stop, reload=None):
        pass  # Ctrl+C arrives as KeyboardInterrupt, handled in main(); no SIGHUP to reload on

    def _start_watchdog(grace: float):
        return None  # would be a Job object with KILL_ON_JOB_CLOSE; not built (see README)


class _Capture:
    """Keeps the first `limit` bytes of a stream and counts the rest."""

    __slots__ = ("limit", "chunks", "kept", "total")

    def __init__(self, limit: int):
        self.limit = limit
        self.chunks = []
        self.kept = 0
        self.total = 0

    def add(self, data: bytes):
        self.total += len(data)
        room = self.limit - self.kept
        if room > 0:
            piece = data[:room]
            self.chunks.append(piece)
            self.kept += len(piece)

    def value(self) -> bytes:
        return b"".join(self.chunks)

    @property
    def cut(self) -> int:
        return self.total - self.kept


class _ChildProtocol(asyncio.SubprocessProtocol):
    """Collects a child's output and tells when it exited and when its pipes closed."""

    def __init__(self, limit: int, on_stderr_line=None):
        loop = asyncio.get_running_loop()
        self.stdout = _Capture(limit)
        self.stderr = _Capture(limit)
        self.exited = loop.create_future()
        self.pipes_closed = loop.create_future()
        self.open_pipes = {1, 2}
        self.on_stderr_line = on_stderr_line
        self._partial = b""

    def pipe_data_received(self, fd, data):
        if fd == 1:
            self.stdout.add(data)
        else:
            self.stderr.add(data)
            if self.on_stderr_line is not None:
                self._lines(data)

    def _lines(self, data):
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            self.on_stderr_line(line.rstrip(b"\r").decode("utf-8", "replace"))

    def pipe_connection_lost(self, fd, exc):
        self.open_pipes.discard(fd)
        if fd == 2 and self._partial and self.on_stderr_line is not None:
            self.on_stderr_line(self._partial.decode("utf-8", "replace"))
            self._partial = b""
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
                 "stdout_cut", "stderr_cut", "error", "seconds")

    def __init__(self, argv, status, returncode=None, stdout=b"", stderr=b"",
                 stdout_cut=0, stderr_cut=0, error="", seconds=0.0):
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
    def ok(self) -> bool:
        return self.status == "exited" and self.returncode == 0


class ProcessRunner:
    """Starts child processes and stops them: the one owner of every child.

    `run()` reads stdout and stderr concurrently while the child runs (no
    pipe-buffer deadlock), enforces the timeout and output limit, kills the
    process group on cancellation, and ends the call when the child exits
    even if a grandchild still holds the pipes. Every process group that may
    still have members stays in `groups` until it is gone, so `stop_all()`
    at shutdown reaches leftovers too.
    """

    def __init__(self, log, grace: float = KILL_GRACE):
        self.log = log
        self.grace = grace
        self.live = {}      # pid -> transport, while the child itself runs
        self.groups = set()  # process groups (leader pids) that may still have members
        self.watchdog = None  # see enable_watchdog() in the aggregator section

    def _tell_watchdog(self, sign: bytes, pid: int):
        if self.watchdog is not None:
            try:
                self.watchdog.stdin.write(b"%s%d\n" % (sign, pid))
                self.watchdog.stdin.flush()
            except (OSError, ValueError):
                self.log.warning("the watchdog is gone; children may outlive a killed mcpstudio")
                self.watchdog = None

    def _track(self, pid: int):
        self.groups.add(pid)
        self._tell_watchdog(b"+", pid)

    def _forget(self, pid: int):
        if pid in self.groups:
            self.groups.discard(pid)
            self._tell_watchdog(b"-", pid)

    def close_watchdog(self):
        """At exit, after stop_all(): the watchdog finds nothing left and exits."""
        if self.watchdog is not None:
            try:
                self.watchdog.stdin.close()
            except OSError:
                pass
            self.watchdog = None

    async def run(self, argv, *, stdin_bytes=None, env=None, cwd=None, timeout=None,
                  output_limit=DEFAULT_MAX_OUTPUT, on_stderr_line=None) -> ProcessResult:
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        try:
            transport, child = await loop.subprocess_exec(
                lambda: _ChildProtocol(output_limit, on_stderr_line), *argv,
                stdin=subprocess.PIPE if stdin_bytes is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd, **_SPAWN_OPTIONS)
        except FileNotFoundError as exc:
            if cwd is not None and not os.path.isdir(cwd):
                return ProcessResult(argv, "error", error="the folder %s does not exist" % cwd)
            import shutil
            found = shutil.which(argv[0]) if os.path.basename(argv[0]) == argv[0] else argv[0]
            if found and os.path.isfile(found):
                return ProcessResult(argv, "error", error="the interpreter on its #! line was not found")
            return ProcessResult(argv, "not-found", error=str(exc))
        except PermissionError as exc:
            return ProcessResult(argv, "denied", error=str(exc))
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte or lone surrogate in argv
            return ProcessResult(argv, "error", error=str(exc))
        pid = transport.get_pid()
        self.live[pid] = transport
        self._track(pid)
        self.log.debug("started pid %d: %s", pid, _argv_text(argv))
        status = "exited"
        try:
            if stdin_bytes is not None:
                pipe = transport.get_pipe_transport(0)
                pipe.write(stdin_bytes)
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
            seconds=time.monotonic() - started)

    def _kill_leftovers(self, pid: int):
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
        """SIGTERM the group, wait up to the grace period for it to end, then SIGKILL it."""
        _signal_group(pid, hard=False)
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
        for pid in groups:
            _signal_group(pid, hard=False)
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline and any(_group_alive(p) for p in groups):
            await asyncio.sleep(0.02)
        for pid in groups:
            _signal_group(pid, hard=True)
            self._forget(pid)


def _argv_text(argv) -> str:
    import shlex
    return " ".join(shlex.quote(str(a)) for a in argv)


# --------------------------------------------------------------------------
# Logging: stderr and an optional log file, never stdout
# --------------------------------------------------------------------------

class Log:
    """Debug and diagnostic lines for people: to stderr, and to `--log FILE`.

    `secrets` are masked in every line written (e.g. `--env` values).
    """

    def __init__(self, debug: bool = False, path: str | None = None, secrets=()):
        self.debug_enabled = debug
        self.file = open(path, "a", encoding="utf-8", errors="replace", buffering=1) if path else None
        # Mask each secret as written and as it appears JSON-escaped; values
        # shorter than 4 characters are not secrets worth mangling a log for.
        self.secrets = []
        self.add_secrets(secrets)
        self.enabled = debug or self.file is not None

    def add_secrets(self, secrets):
        """Mask these values (as written and JSON-escaped) in every line from now on."""
        forms = set(self.secrets)
        for secret in secrets:
            if len(secret) >= 4:
                forms.update((secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]))
        self.secrets = sorted(forms, key=len, reverse=True)

    def mask(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def _write(self, level: str, message: str, to_stderr: bool):
        message = self.mask(message)
        # A log that cannot be written (stderr closed, disk full) must never
        # stop the server: the line is dropped.
        if to_stderr:
            try:
                sys.stderr.write("mcpstudio: %s%s\n" % ("" if level == "info" else level + ": ", message))
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
        if self.file is not None:
            try:
                self.file.write("%s %s %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), level.upper(), message))
            except (OSError, ValueError):
                pass

    def debug(self, fmt: str, *args):
        if self.enabled:
            self._write("debug", fmt % args if args else fmt, self.debug_enabled)

    def info(self, fmt: str, *args):
        self._write("info", fmt % args if args else fmt, True)

    def warning(self, fmt: str, *args):
        self._write("warning", fmt % args if args else fmt, True)

    def error(self, fmt: str, *args):
        self._write("error", fmt % args if args else fmt, True)

    def wire(self, direction: str, data: bytes):
        """Record one protocol message in the log file."""
        if self.file is not None:
            self._write("wire", "%s %s" % (direction, data.decode("utf-8", "replace").rstrip("\n")), False)

    def close(self):
        if self.file is not None:
            try:
                self.file.close()
            except OSError:
                pass
            self.file = None


# --------------------------------------------------------------------------
# JSON-RPC session and the stdio transport
# --------------------------------------------------------------------------

NEWLINE = "newline"
CONTENT_LENGTH = "content-length"


def encode_message(message, framing: str = NEWLINE) -> bytes:
    """One JSON-RPC message as bytes on the wire, in the given framing."""
    try:
        body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only the escaped form is valid UTF-8
        body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    if framing == CONTENT_LENGTH:
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    return body + b"\n"


class StdioTransport:
    """Newline-delimited JSON on two file descriptors, read and written by threads.

    Reading happens in a thread that hands each message to the loop (works
    for pipes, files and terminals on every platform); writing happens in a
    thread too, so a client that stops reading never stalls the loop, except
    that a small message the pipe has room for is written at once. Input
    may also use `Content-Length:` headers; each message records its framing
    so the answer can use the same.
    """

    def __init__(self, in_fd: int, out_fd: int, log: Log):
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.log = log
        self.framing = NEWLINE
        import queue
        self._outbox = queue.SimpleQueue()
        self._writer = None
        self._queued = 0           # messages handed to the writer thread and not yet written
        self._lock = threading.Lock()

    def start(self, loop, on_message, on_eof):
        """Begin reading; `on_message(bytes, framing)` and `on_eof()` run on `loop`."""
        def deliver(data, framing):
            loop.call_soon_threadsafe(on_message, data, framing)
        reader = threading.Thread(target=self._read_loop, args=(deliver, lambda: loop.call_soon_threadsafe(on_eof)),
                                  name="mcpstudio-stdin", daemon=True)
        reader.start()
        self._writer = threading.Thread(target=self._write_loop, name="mcpstudio-stdout", daemon=True)
        self._writer.start()

    def _read_loop(self, deliver, eof):
        buf = bytearray()
        scan = 0
        pending = None  # Content-Length of the body being read, after its headers
        headers_seen = False
        skip, skip_line = 0, False  # an oversized message being thrown away
        try:
            while True:
                if skip:
                    taken = min(skip, len(buf))
                    del buf[:taken]
                    skip -= taken
                    if not skip:
                        continue  # the next message may already be in the buffer
                elif pending is not None and pending > MAX_MESSAGE:
                    skip, pending, headers_seen = pending, None, False
                    deliver(None, CONTENT_LENGTH)  # answered "too large"; the stream stays in step
                    continue
                elif pending is not None:
                    if len(buf) >= pending:
                        body = bytes(buf[:pending])
                        del buf[:pending]
                        pending, scan, headers_seen = None, 0, False
                        deliver(body, CONTENT_LENGTH)
                        continue
                else:
                    nl = buf.find(b"\n", scan)
                    if nl >= 0 and (skip_line or nl > MAX_MESSAGE):
                        del buf[: nl + 1]
                        scan = 0
                        if not skip_line:
                            deliver(None, NEWLINE)
                        skip_line = False
                        continue
                    if nl >= 0:
                        line = bytes(buf[:nl])
                        del buf[: nl + 1]
                        scan = 0
                        if line.endswith(b"\r"):
                            line = line[:-1]
                        if line[:15].lower() == b"content-length:":
                            try:
                                pending_len = int(line[15:].strip())
                            except ValueError:
                                deliver(line, NEWLINE)  # reported as a parse error
                                continue
                            headers_seen = pending_len
                            continue
                        if headers_seen is not False and not line.strip():
                            pending = headers_seen  # blank line ends the headers
                            continue
                        if headers_seen is not False:
                            continue  # another header (Content-Type): skip
                        if line.strip():
                            deliver(line, NEWLINE)
                        continue
                    if skip_line:
                        buf.clear()
                    elif len(buf) > MAX_MESSAGE:
                        buf.clear()
                        skip_line = True
                        deliver(None, NEWLINE)
                    scan = len(buf)
                chunk = os.read(self.in_fd, 1 << 16)
                if not chunk:
                    if pending is None and buf.strip() and headers_seen is False and not skip_line:
                        deliver(bytes(buf).rstrip(b"\r"), NEWLINE)  # last line without newline
                    break
                buf += chunk
        except OSError:
            pass
        eof()

    def send(self, message, framing: str | None = None, related=None):
        data = encode_message(message, framing or self.framing)
        if self.log.file is not None:
            self.log.wire("<-", data)
        with self._lock:
            # The fast path: nothing queued, a small message, and room in the pipe. A write
            # of at most PIPE_BUF (4096) bytes to a pipe with room is whole and never blocks,
            # so the loop writes it itself and saves the hand-off to the writer thread.
            if self._queued == 0 and len(data) <= 4096 and _writable_now(self.out_fd):
                try:
                    os.write(self.out_fd, data)
                    return
                except OSError:
                    pass  # let the writer thread find out
            self._queued += 1
        self._outbox.put(data)

    def _write_loop(self):
        while True:
            data = self._outbox.get()
            if data is None:
                return
            try:
                view = memoryview(data)
                while view:
                    written = os.write(self.out_fd, view)
                    view = view[written:]
            except OSError:
                return  # the client is gone; nothing more can be said
            finally:
                with self._lock:
                    self._queued -= 1

    def close(self, timeout: float = 2.0):
        """Flush what is queued (up to `timeout` seconds) and stop the writer."""
        self._outbox.put(None)
        if self._writer is not None:
            self._writer.join(timeout)


class CallContext:
    """What one request may do back toward the client while it runs.

    Once the client cancels the request, `cancelled` is set and nothing more
    is sent for it (no progress, no log lines).
    """

    __slots__ = ("session", "request_id", "progress_token", "cancelled", "_progress", "modern", "level")

    def __init__(self, session, request_id, progress_token=None):
        self.session = session
        self.request_id = request_id
        self.progress_token = progress_token
        self.cancelled = False
        self._progress = None
        self.modern = False  # a 2026-07-28 request: its own log level, from its `_meta`
        self.level = None

    def notify(self, method: str, params: dict):
        """A notification that belongs to this request (on HTTP: its own response stream)."""
        self.session.notify(method, params, self.request_id)

    def progress(self, progress: float, total: float | None = None, message: str | None = None):
        """Send `notifications/progress` if the client asked for it; values only increase."""
        if (self.progress_token is None or self.cancelled
                or (self._progress is not None and progress <= self._progress)):
            return
        self._progress = progress
        params = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message:
            params["message"] = message
        self.notify("notifications/progress", params)

    def log(self, level: str, text: str, logger: str = "mcpstudio"):
        if self.wants(level):
            self.notify("notifications/message", {"level": level, "logger": logger, "data": text})

    def wants(self, level: str) -> bool:
        """Whether a log line at `level` would reach the client (skip building it if not).

        Handshake era: the session's level (`logging/setLevel`). 2026-07-28: the
        request's own `_meta` level, and no log lines at all without one."""
        threshold = self.level if self.modern else self.session.log_level
        return (not self.cancelled and threshold is not None
                and LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold))

    async def heartbeat(self, label: str):
        """Report progress every PROGRESS_INTERVAL until cancelled (keeps client timeouts alive)."""
        started = time.monotonic()
        self.progress(0, message="started %s" % label)
        while True:
            await asyncio.sleep(PROGRESS_INTERVAL)
            elapsed = time.monotonic() - started
            self.progress(round(elapsed, 1), message="%s running for %.0f s" % (label, elapsed))


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
        self.log_level = "info"
        self.closed = False

    # -- incoming ---------------------------------------------------------------

    def receive(self, data, framing: str):
        if self.closed:
            return  # shutting down: what arrives now is not started
        if data is None:
            self.transport.send(_error_response(None, McpError(
                PARSE_ERROR, "Parse error: a message larger than %d bytes was skipped" % MAX_MESSAGE)), framing)
            return
        if self.log.file is not None:
            self.log.wire("->", data)
        self.transport.framing = framing
        try:
            message = json.loads(data)
        except (ValueError, RecursionError) as exc:
            self.transport.send(_error_response(None, McpError(PARSE_ERROR, "Parse error: %s" % exc)), framing)
            return
        if isinstance(message, list):
            if not message:
                self.transport.send(_error_response(None, McpError(INVALID_REQUEST, "Invalid request: empty batch")), framing)
                return
            asyncio.ensure_future(self._batch(message, framing))
            return
        outcome = self._handle(message)
        if isinstance(outcome, dict):
            self.transport.send(outcome, framing)
        elif outcome is not None:
            self._start(outcome, framing)

    def _start(self, outcome, framing):
        """Run a request's coroutine as a task; with a framing, send its answer when done."""
        request_id, coroutine, ctx = outcome
        task = asyncio.ensure_future(self._complete(request_id, coroutine))
        self.inflight[request_id] = (task, ctx)

        def done(task):
            self.inflight.pop(request_id, None)
            coroutine.close()  # a request cancelled before it started never ran its coroutine
            if framing is not None and not task.cancelled() and task.exception() is None:
                self.transport.send(task.result(), framing)
            elif task.cancelled() and hasattr(self.transport, "ended"):
                self.transport.ended(request_id)  # HTTP: end the stream that waited for it
        task.add_done_callback(done)
        return task

    async def _batch(self, messages, framing):
        replies = []
        for message in messages:
            outcome = self._handle(message)
            replies.append(self._start(outcome, None) if isinstance(outcome, tuple) else outcome)
        answers = []
        for reply in replies:
            if isinstance(reply, asyncio.Future):
                try:
                    reply = await reply
                except asyncio.CancelledError:
                    reply = None
            if reply is not None:
                answers.append(reply)
        if answers:
            self.transport.send(answers, framing)

    def _handle(self, message):
        """Return None (nothing to send), a response dict, or (id, coroutine, ctx)."""
        if not isinstance(message, dict):
            return _error_response(None, McpError(INVALID_REQUEST, "Invalid request: expected a JSON object"))
        request_id = message.get("id")
        if request_id is not None and (isinstance(request_id, bool) or not isinstance(request_id, (str, int))):
            return _error_response(None, McpError(INVALID_REQUEST, "Invalid request: `id` must be a string or an integer"))
        if message.get("jsonrpc") != "2.0":
            return _error_response(request_id, McpError(INVALID_REQUEST, 'Invalid request: `jsonrpc` must be "2.0"'))
        method = message.get("method")
        if method is None:
            if "result" in message or "error" in message:
                return None  # a response to a request of ours: none are outstanding
            return _error_response(request_id, McpError(INVALID_REQUEST, "Invalid request: no `method`"))
        if not isinstance(method, str):
            return _error_response(request_id, McpError(INVALID_REQUEST, "Invalid request: `method` must be a string"))
        params = message.get("params")
        if "id" not in message:
            self._notification(method, params if isinstance(params, dict) else {})
            return None
        if request_id is None:
            return _error_response(None, McpError(INVALID_REQUEST, "Invalid request: `id` must not be null"))
        if request_id in self.inflight:
            return _error_response(request_id, McpError(
                INVALID_REQUEST, "Invalid request: id %s is already in use by a request in progress" % json.dumps(request_id)))
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return _error_response(request_id, McpError(INVALID_PARAMS, "Invalid params: expected an object"))
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        ctx = CallContext(self, request_id, token)
        try:
            result = self.dispatcher(method, params, ctx)
        except McpError as exc:
            return _error_response(request_id, exc)
        except Exception as exc:  # the boundary: nothing escapes as a crash
            self.log.error("internal error in %s: %r", method, exc)
            return _error_response(request_id, McpError(INTERNAL_ERROR, "Internal error: %s" % exc))
        if asyncio.iscoroutine(result):
            return request_id, result, ctx
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _complete(self, request_id, coroutine):
        """Run a request's coroutine to a response dict."""
        try:
            result = await coroutine
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
        except McpError as exc:
            return _error_response(request_id, exc)
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            self.log.error("internal error: %r", exc)
            return _error_response(request_id, McpError(INTERNAL_ERROR, "Internal error: %s" % exc))

    def _notification(self, method, params):
        if method == "notifications/cancelled":
            request_id = params.get("requestId")
            entry = self.inflight.get(request_id) if isinstance(request_id, (str, int)) else None
            if entry is not None:
                self.log.debug("cancelling request %r: %s", request_id, params.get("reason", ""))
                entry[1].cancelled = True
                entry[0].cancel()
        elif self.on_notification is not None:
            self.on_notification(method, params, self)

    # -- outgoing ---------------------------------------------------------------

    def notify(self, method: str, params: dict, related=None):
        """Send a notification; `related` is the id of the request it belongs to, if any."""
        self.transport.send({"jsonrpc": "2.0", "method": method, "params": params}, related=related)

    def log_to_client(self, level: str, text: str, logger: str = "mcpstudio"):
        """Send `notifications/message` when `level` reaches the client's chosen level."""
        if LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level):
            self.notify("notifications/message", {"level": level, "logger": logger, "data": text})

    async def cancel_all(self, grace: float = 0.0):
        """Stop taking requests; give those in flight `grace` seconds, then cancel the rest."""
        self.closed = True
        tasks = [task for task, _ in self.inflight.values()]
        if tasks and grace > 0:
            await asyncio.wait(tasks, timeout=grace)
        tasks = [task for task, ctx in self.inflight.values() if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=KILL_GRACE + 2)


def _error_response(request_id, error: McpError) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}


# --------------------------------------------------------------------------
# Sources: template tools
# --------------------------------------------------------------------------

_IMAGE_TYPES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _image_type(data: bytes) -> str | None:
    for magic, mime in _IMAGE_TYPES:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def output_content(data: bytes, uri: str, cut: bool = False) -> dict:
    """stdout as MCP content: text when it is UTF-8, an image, or an embedded blob.

    When the output was cut (`cut`), a character split by the cut is dropped.
    """
    for end in (len(data), len(data) - 1, len(data) - 2, len(data) - 3)[: 4 if cut else 1]:
        try:
            return {"type": "text", "text": data[:end].decode("utf-8")}
        except UnicodeDecodeError:
            continue
    import base64
    encoded = base64.b64encode(data).decode("ascii")
    mime = _image_type(data)
    if mime:
        return {"type": "image", "data": encoded, "mimeType": mime}
    return {"type": "resource",
            "resource": {"uri": uri, "mimeType": "application/octet-stream", "blob": encoded}}


def _signal_name(number: int) -> str:
    try:
        return "%s (%d)" % (signal.Signals(number).name, number)
    except ValueError:
        return str(number)


def describe_failure(result: ProcessResult, timeout, subject: str | None = None) -> str | None:
    """One sentence for a command that did not succeed, or None when it did.

    `subject` names the command in the sentence (default: its base name).
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
    if result.returncode:
        return "%s exited with code %d." % (command, result.returncode)
    return None


def command_result(result: ProcessResult, timeout, uri: str) -> dict:
    """A CallToolResult for a finished command: its output, and why it failed if it did."""
    content = []
    failure = describe_failure(result, timeout)
    if failure:
        content.append({"type": "text", "text": failure})
    if result.stdout or not (failure or result.stderr):
        block = output_content(result.stdout, uri, result.stdout_cut > 0)
        if block["type"] == "text" and not block["text"] and not failure:
            block["text"] = "(no output)"
        content.append(block)
    if result.stdout_cut:
        content.append({"type": "text", "text": "[stdout cut: %d more bytes not shown]" % result.stdout_cut})
    if result.stderr:
        text = result.stderr.decode("utf-8", "replace")
        if result.stderr_cut:
            text += "\n[stderr cut: %d more bytes not shown]" % result.stderr_cut
        content.append({"type": "text", "text": "[stderr]\n" + text})
    return {"content": content, "isError": failure is not None}


def tool_error(message: str) -> dict:
    return {"content": [{"type": "text", "text": message}], "isError": True}


class RunSettings:
    """How a source's commands run: environment, folder, limits, concurrency."""

    def __init__(self, env=None, cwd=None, timeout=DEFAULT_TIMEOUT, max_output=DEFAULT_MAX_OUTPUT,
                 max_concurrency=DEFAULT_MAX_CONCURRENCY, allow_dash_values=False):
        self.env = env
        self.cwd = cwd
        self.timeout = timeout
        self.max_output = max_output
        self.max_concurrency = max_concurrency
        self.allow_dash_values = allow_dash_values
        self._gate = [None]  # the semaphore, shared with derived settings

    @property
    def slots(self):
        """The semaphore that caps running commands (made on the running loop)."""
        if self._gate[0] is None:
            self._gate[0] = asyncio.Semaphore(self.max_concurrency)
        return self._gate[0]

    def derive(self, **overrides) -> "RunSettings":
        """A copy with some settings changed, sharing the same concurrency cap."""
        import copy
        other = copy.copy(self)  # shallow: `_gate` stays shared
        for key, value in overrides.items():
            setattr(other, key, value)
        return other


class CommandTool:
    """A tool that renders a Template to argv and runs it.

    `schema` and `defaults` come from the template's fields unless given (a
    config file's `parameters`); `stdin` is a text template fed to the
    command; `shell` runs the template as `sh -c SCRIPT mcpstudio VALUES...`.
    """

    def __init__(self, name: str, template: Template, runner: ProcessRunner, settings: RunSettings,
                 description: str | None = None, title: str | None = None, annotations: dict | None = None,
                 schema: dict | None = None, defaults: dict | None = None, stdin=None, shell: bool = False):
        self.name = name
        self.template = template
        self.runner = runner
        self.settings = settings
        self.description = description or "Run `%s`." % template.display()
        self.title = title
        self.annotations = annotations or {}
        self.schema = schema or template.input_schema()
        self.defaults = defaults or {}
        self.stdin = stdin
        self.shell = shell

    def definition(self) -> dict:
        tool = {"name": self.name, "description": self.description, "inputSchema": self.schema}
        if self.title:
            tool["title"] = self.title
        if self.annotations:
            tool["annotations"] = self.annotations
        return tool

    def argv(self, arguments: dict) -> list:
        """The argv a call with these (validated, defaulted) arguments runs."""
        argv = self.template.render(arguments, self.settings.allow_dash_values, not self.shell)  # dash guard
        if self.shell:
            script, values = self.template.render_shell(arguments)
            return ["sh", "-c", script, "mcpstudio"] + values
        return argv

    async def call(self, arguments: dict, ctx: CallContext) -> dict:
        arguments = as_text_where_strings(match_spellings(arguments, self.schema["properties"]), self.schema)
        if self.defaults:
            arguments = dict(self.defaults, **arguments)
        problems = validate(arguments, self.schema)
        if problems:
            return tool_error(_argument_help(self.name, problems, self.schema))
        try:
            argv = self.argv(arguments)
        except ToolError as exc:
            return tool_error(str(exc))
        stdin = self.stdin.render_text(arguments).encode("utf-8") if self.stdin is not None else None
        settings = self.settings
        if ctx.wants("debug"):
            ctx.log("debug", "running: %s" % _argv_text(argv))
        heartbeat = None
        if ctx.progress_token is not None:  # also while the call waits for a slot
            heartbeat = asyncio.ensure_future(ctx.heartbeat("`%s`" % self.template.command_name()))
        try:
            async with settings.slots:
                result = await self.runner.run(argv, stdin_bytes=stdin, env=settings.env, cwd=settings.cwd,
                                               timeout=settings.timeout, output_limit=settings.max_output)
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
        if ctx.wants("debug"):
            ctx.log("debug", "`%s` %s in %.3f s" % (self.template.command_name(),
                    "exited with code %s" % result.returncode if result.status == "exited" else result.status,
                    result.seconds))
        return command_result(result, settings.timeout, "mcpstudio://%s/stdout" % self.name)


def as_text_where_strings(arguments: dict, schema: dict) -> dict:
    """Numbers given for string properties become their text, and numeric text
    given for number properties becomes a number.

    Clients and models often send `{"limit": 5}` for a string field (or "5"
    for an integer); the value ends up as argv text either way, so refusing
    it would only cost a retry.
    """
    properties = schema.get("properties", {})
    out = None
    for key, value in arguments.items():
        prop = properties.get(key) or {}
        kind = prop.get("type")
        if kind == "string" and isinstance(value, (int, float)):
            new = _text(value)
        elif kind in ("integer", "number") and isinstance(value, str) and _NUMBER.fullmatch(value.strip()):
            number = float(value)
            new = int(number) if kind == "integer" and number.is_integer() and "." not in value else number
        elif (prop.get("type") == "array" and (prop.get("items") or {}).get("type") == "string"
              and isinstance(value, list) and any(isinstance(v, (int, float)) for v in value)):
            new = [_text(v) if isinstance(v, (int, float)) else v for v in value]
        else:
            continue
        if out is None:
            out = dict(arguments)
        out[key] = new
    return arguments if out is None else out


def _argument_help(tool: str, problems: list, schema: dict) -> str:
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    valid = ", ".join("%s (%s%s)" % (k, v.get("type", "any"), ", required" if k in required else "")
                      for k, v in properties.items()) or "none: call it with {}"
    return "Invalid arguments for `%s`: %s. Valid arguments: %s." % (tool, "; ".join(problems), valid)


class TemplateTools:
    """A tool source made of CommandTools (template mode has exactly one).

    Sources share one small contract, so the catalog never needs to know
    their kind: `list_tools()` (MCP Tool dicts under original names),
    `call_tool(name, arguments, ctx)`, and where `resources` is true,
    `list_resources()` and `read_resource(uri, ctx)`; `start()` and `close()`
    for sources with work of their own; `dynamic` when the tool set can
    change, reported through `events.source_changed(source)`.
    """

    dynamic = False

    def __init__(self, tools, resources=()):
        self.tools = {tool.name: tool for tool in tools}
        self.command_resources = list(resources)
        self.resources = bool(self.command_resources)
        self.events = None

    def start(self):
        pass

    async def list_tools(self) -> list:
        return [tool.definition() for tool in self.tools.values()]

    async def call_tool(self, name: str, arguments: dict, ctx: CallContext) -> dict:
        return await self.tools[name].call(arguments, ctx)

    async def list_resources(self) -> list:
        return [r.definition() for r in self.command_resources if r.pattern is None]

    async def list_resource_templates(self) -> list:
        return [r.definition() for r in self.command_resources if r.pattern is not None]

    async def read_resource(self, uri: str, ctx: CallContext):
        for resource in self.command_resources:
            values = resource.match(uri)
            if values is not None:
                return await resource.read(uri, values)
        return None

    async def close(self):
        pass


# --------------------------------------------------------------------------
# Sources: a folder of self-describing scripts (mcpd)
# --------------------------------------------------------------------------
# Every executable under the root answers `--help` with its metadata (JSON on
# stdout) and options (JSON on stderr). Discovery is cached by real path,
# size and modification time, in memory and on disk, so unchanged scripts are
# never asked twice, not even across restarts.
# Compiled on first use (see "Sections compiled on first use" at the top).
_section('scripts', source=r'''
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

def user_cache_dir() -> str:
    """$XDG_CACHE_HOME/mcpstudio, else the platform's user cache folder."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        if sys.platform == "darwin":
            base = os.path.expanduser("~/Library/Caches")
        elif os.name == "nt":
            base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
        else:
            base = os.path.expanduser("~/.cache")
    return os.path.join(base, "mcpstudio")


def script_schema(options) -> tuple:
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
        if not isinstance(spec.get("required"), bool):
            raise ValueError("%s: `required` must be true or false" % where)
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
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in size.values()):
                raise ValueError("%s: `size` must be an object of numbers like {\"min\": 1, \"max\": 10}" % where)
            bounds = {"string": ("minLength", "maxLength"), "integer": ("minimum", "maximum"),
                      "number": ("minimum", "maximum")}.get(prop.get("type"))
            if bounds:
                for key, rule in zip(("min", "max"), bounds):
                    if key in size:
                        prop[rule] = size[key]
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
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema, defaults


def _cache_entry_ok(entry) -> bool:
    """A discovery cache entry has the shape this version writes (anything else is asked again)."""
    return (isinstance(entry, dict) and isinstance(entry.get("size"), int) and isinstance(entry.get("mtime"), int)
            and (isinstance(entry.get("error"), str)
                 or (isinstance(entry.get("meta"), dict) and isinstance(entry.get("options"), dict))))


def _option_env(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value)


class ScriptTool:
    """One discovered script: its schema, and how to call it."""

    def __init__(self, rel: str, path: str, name: str, meta: dict, options: dict):
        self.rel = rel
        self.path = path
        self.name = name
        self.meta = meta
        self.schema, self.defaults = script_schema(options)
        self.state = meta.get("state") is True

    @property
    def state_uri(self) -> str:
        from urllib.parse import quote
        return "mcpd://%s/state" % quote(self.rel, safe="/")

    def definition(self) -> dict:
        title = self.meta.get("title")
        tool = {
            "name": self.name,
            "title": "%s (%s)" % (title, self.rel) if title else self.rel,
            "description": str(self.meta.get("description") or "Run the script %s." % self.rel),
            "inputSchema": self.schema,
        }
        return tool


class ScriptDirectory:
    """Every executable under a root folder, as tools (and `--state` resources)."""

    dynamic = True
    resources = True  # declared from the kind of source, never from what was found

    def __init__(self, root: str, runner: ProcessRunner, settings: RunSettings, log: Log, *,
                 include=(), exclude=(), separator: str = "__", cache_dir: str | None = None,
                 rescan: float = RESCAN_INTERVAL, help_timeout: float = HELP_TIMEOUT):
        self.root = os.path.realpath(root)
        self.runner = runner
        self.settings = settings
        self.log = log
        self.include = list(include)
        self.exclude = list(exclude)
        self.separator = separator
        self.rescan_interval = rescan
        self.help_timeout = help_timeout
        import hashlib
        digest = hashlib.sha256(self.root.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        self.cache_path = os.path.join(cache_dir or user_cache_dir(), "scripts-%s.json" % digest)
        self.events = None
        self.tools = {}        # name -> ScriptTool
        self.help_runs = 0     # how many --help ran (the benchmark and tests read it)
        self._known = {}       # real path -> {"size", "mtime", "meta", "options"} or {..., "error"}
        self._warned = set()
        self._asked = set()    # real paths whose --help ran in this process
        self._lock = None
        self._ready = None
        self._watcher = None

    # -- discovery ------------------------------------------------------------

    def start(self):
        """Begin discovery in the background: `initialize` never waits for it."""
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

    async def _safe_rescan(self, first: bool = False):
        try:
            await self.rescan(first)
        except Exception as exc:  # a failed look never stops the server
            self.log.error("scripts in %s: discovery failed: %r", self.root, exc)

    def _walk(self) -> dict:
        """rel path -> (real path, size, mtime) for every candidate script."""
        from fnmatch import fnmatchcase
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
                if self.include and not any(fnmatchcase(rel, g) for g in self.include):
                    continue
                if any(fnmatchcase(rel, g) for g in self.exclude):
                    continue
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                if not (st.st_mode & 0o170000 == 0o100000) or not _is_executable(path):
                    self.log.debug("scripts: %s skipped (not an executable file)", rel)
                    continue
                found[rel] = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
        return found

    async def rescan(self, first: bool = False) -> bool:
        """Look for added, changed and removed scripts; True (and an event) if the set changed."""
        async with self._lock:
            found = await asyncio.get_running_loop().run_in_executor(None, self._walk)  # big trees: off the loop
            stale = [(rel, info) for rel, info in found.items() if not self._fresh(info)]
            if stale:
                slots = asyncio.Semaphore(HELP_CONCURRENCY)

                async def describe(info):
                    async with slots:
                        self._known[info[0]] = await self._describe(info)
                await asyncio.gather(*(describe(info) for _, info in stale))
            live = {info[0] for info in found.values()}
            removed = [path for path in self._known if path not in live]
            for path in removed:
                del self._known[path]
            if stale or removed:
                self._save_cache()
            before = {name: (t.path, t.rel, id(t)) for name, t in self.tools.items()}
            self.tools = self._build(found)
            changed = {name: (t.path, t.rel, id(t)) for name, t in self.tools.items()} != before
        if changed and not first and self.events is not None:
            self.events.source_changed(self)
        return changed

    def _fresh(self, info) -> bool:
        entry = self._known.get(info[0])
        return entry is not None and entry.get("size") == info[1] and entry.get("mtime") == info[2]

    def _names(self, rels) -> dict:
        """rel path -> tool name. The path's parts joined by the separator, extensions
        dropped; scripts that would share a name (a.sh, a.py) all get a hash of their
        path instead, so a name never moves from one script to another."""
        wanted = {rel: safe_name(self.separator.join(os.path.splitext(p)[0] or p for p in rel.split("/")), 1000)
                  for rel in rels}
        counts = {}
        for name in wanted.values():
            counts[name] = counts.get(name, 0) + 1
        import hashlib
        return {rel: name if counts[name] == 1 else
                "%s_%s" % (name, hashlib.sha256(rel.encode("utf-8", "surrogatepass")).hexdigest()[:6])
                for rel, name in wanted.items()}

    def _build(self, found: dict) -> dict:
        tools = {}
        old = {t.rel: t for t in self.tools.values()}
        names = self._names(found)
        for rel, (path, size, mtime) in sorted(found.items()):
            entry = self._known[path]
            problem = entry.get("error")
            tool = None
            if problem is None:
                previous = old.get(rel)
                name = names[rel]
                if (previous is not None and previous.path == path and previous.meta is entry["meta"]
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
                    if self.events is not None:
                        self.events.source_log("warning", message)
                continue
            tools[tool.name] = tool
        return tools

    async def _describe(self, info) -> dict:
        """Run `script --help` and keep what it says (or what went wrong)."""
        path, size, mtime = info
        entry = {"size": size, "mtime": mtime}
        self.help_runs += 1
        self._asked.add(path)
        result = await self.runner.run([path, "--help"], env=self.settings.env, cwd=self.settings.cwd,
                                       timeout=self.help_timeout, output_limit=1 << 20)
        if not result.ok:
            tail = result.stderr.decode("utf-8", "replace").strip()[-300:]
            entry["error"] = describe_failure(result, self.help_timeout, "`--help`") + ((" " + tail) if tail else "")
            if result.status != "exited" or (result.returncode or 0) < 0:
                entry["transient"] = True  # a timeout or signal: asked again after a restart
            return entry
        try:
            meta = json.loads(result.stdout.decode("utf-8") or "{}")
            if not isinstance(meta, dict):
                raise ValueError("expected a JSON object")
        except ValueError as exc:
            entry["error"] = ("`--help` printed invalid metadata on stdout (%s): stdout must hold one JSON "
                              "object; the options go to stderr (>&2)" % exc)
            return entry
        try:
            text = result.stderr.decode("utf-8").strip()
            options = json.loads(text) if text else {}
            script_schema(options)
        except ValueError as exc:
            entry["error"] = ("`--help` printed invalid options on stderr (%s): stderr must hold one JSON "
                              "object of options, or nothing" % exc)
            return entry
        entry["meta"], entry["options"] = meta, options
        return entry

    def _load_cache(self) -> dict:
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
            os.makedirs(os.path.dirname(self.cache_path), exist_ok=True)
            tmp = "%s.%d.tmp" % (self.cache_path, os.getpid())
            lasting = {path: entry for path, entry in self._known.items() if not entry.get("transient")}
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"format": CACHE_FORMAT, "root": self.root, "scripts": lasting}, f)
            os.replace(tmp, self.cache_path)
        except OSError as exc:
            self.log.debug("cannot write the discovery cache %s: %s", self.cache_path, exc)

    async def _current(self) -> dict:
        await asyncio.wait([self._ready])
        return self.tools

    # -- the source contract ------------------------------------------------------

    async def list_tools(self) -> list:
        if self._ready.done():
            await self._safe_rescan()  # cheap: a walk, and --help only for what changed
        return [tool.definition() for tool in (await self._current()).values()]

    async def call_tool(self, name: str, arguments: dict, ctx: CallContext) -> dict:
        tool = (await self._current()).get(name)
        if tool is None:
            return tool_error("The script behind `%s` is gone; list the tools again." % name)
        values = dict(tool.defaults)
        values.update(match_spellings(arguments, tool.schema["properties"]))
        problems = validate(values, tool.schema)
        if problems:
            return tool_error(_argument_help(name, problems, tool.schema))
        env = dict(self.settings.env or os.environ)
        for key, value in values.items():
            env["MCPD_OPT_" + key] = _option_env(value)
            safe = re.sub(r"[^A-Za-z0-9_]", "_", key)
            if safe != key:  # also a spelling every shell can read: MCPD_OPT_max_count
                env.setdefault("MCPD_OPT_" + safe, _option_env(value))
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
        heartbeat = None
        if ctx.progress_token is not None:
            heartbeat = asyncio.ensure_future(ctx.heartbeat(tool.rel))
        try:
            async with self.settings.slots:
                result = await self.runner.run(
                    [tool.path], stdin_bytes=json.dumps(values).encode("utf-8"), env=env, cwd=self.settings.cwd,
                    timeout=self.settings.timeout, output_limit=self.settings.max_output, on_stderr_line=stderr_line)
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
        return script_result(tool, result, kept, self.settings.timeout)

    async def list_resources(self) -> list:
        return [{"uri": t.state_uri, "name": "%s state" % t.rel, "mimeType": "application/json",
                 "description": "Current state of the script %s (its --state output)." % t.rel}
                for t in (await self._current()).values() if t.state]

    async def list_resource_templates(self) -> list:
        return []

    async def read_resource(self, uri: str, ctx: CallContext):
        from urllib.parse import unquote
        tool = next((t for t in (await self._current()).values()
                     if t.state and unquote(t.state_uri) == unquote(uri)), None)
        if tool is None:
            return None
        result = await self.runner.run([tool.path, "--state"], env=self.settings.env, cwd=self.settings.cwd,
                                       timeout=self.help_timeout, output_limit=self.settings.max_output)
        if not result.ok:
            why = describe_failure(result, self.help_timeout, "`%s --state`" % tool.rel)
            detail = result.stderr.decode("utf-8", "replace").strip()[-500:]
            raise McpError(INTERNAL_ERROR, "Reading %s failed: %s%s" % (uri, why, (" " + detail) if detail else ""),
                           {"uri": uri, "exitCode": result.returncode})
        text = result.stdout.decode("utf-8", "replace")
        try:
            json.loads(text)
        except ValueError:
            text = json.dumps(text.rstrip("\n"))
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": text}]}

    async def close(self):
        for task in (self._watcher, self._ready):
            if task is not None and not task.done():
                task.cancel()


def script_result(tool: ScriptTool, result: ProcessResult, kept: list, timeout) -> dict:
    """A CallToolResult for a script run, following the mcpd exit-code table."""
    block = output_content(result.stdout, "mcpd://%s/output" % tool.rel, result.stdout_cut > 0)
    if result.ok:
        reply = {"content": [block], "isError": False}
        other = [line for line in kept if not line.startswith("ERROR")]
        if other:
            reply["content"].append({"type": "text", "text": "[stderr]\n" + "\n".join(other)})
        if block["type"] == "text":
            try:
                data = json.loads(block["text"])
            except ValueError:
                data = None
            if isinstance(data, dict):
                reply["structuredContent"] = data
        if result.stdout_cut:
            reply["content"].append({"type": "text", "text": "[stdout cut: %d more bytes not shown]" % result.stdout_cut})
        return reply
    code = result.returncode
    if result.status == "exited" and code and code > 0:
        meaning = SCRIPT_EXIT_MEANINGS.get(code, "an exit code the script spec does not define")
        headline = "Script %s failed with exit code %d: %s." % (tool.rel, code, meaning)
    else:
        headline = describe_failure(result, timeout, "Script %s" % tool.rel)
    content = [{"type": "text", "text": headline}]
    if result.stdout:
        content.append(block)
    if kept:
        content.append({"type": "text", "text": "[stderr]\n" + "\n".join(kept)})
    return {"content": content, "isError": True}
''')


# --------------------------------------------------------------------------
# Catalog: public names, routing table, pagination
# --------------------------------------------------------------------------

class Catalog:
    """Every source's tools and resources under one list of client-safe names."""

    def __init__(self, sources, max_name_length: int = DEFAULT_MAX_NAME_LENGTH):
        self.sources = list(sources)
        self.max_name_length = max_name_length
        self.events = None
        self._routes = {}     # public name -> (source, original name), from the last listing
        self._resources = {}  # uri -> source
        self._prompts = {}    # public prompt name -> (source, original name)

    @property
    def dynamic(self) -> bool:
        return any(s.dynamic for s in self.sources)

    @property
    def has_resources(self) -> bool:
        return any(s.resources for s in self.sources)

    @property
    def has_prompts(self) -> bool:
        return any(getattr(s, "prompts", False) for s in self.sources)

    @property
    def refusal(self):
        """An McpError every request is answered with (a config that cannot serve), or None."""
        return next((s.refusal for s in self.sources if getattr(s, "refusal", None)), None)

    def reload_signal(self):
        """What SIGHUP should call (a source that re-reads its config), or None to stop on it."""
        return next((s.reload_signal for s in self.sources if hasattr(s, "reload_signal")), None)

    def session_started(self):
        """`initialize` was answered: sources may begin what waits for a client (eager starts)."""
        for source in self.sources:
            if hasattr(source, "session_started"):
                source.session_started()

    def start(self, events):
        """Begin each source's background work; changes are reported to `events`."""
        self.events = events
        for source in self.sources:
            source.events = events
            source.start()

    def _publish(self, source, items, routes: dict, out: list):
        """Give each item a client-safe public name, distinct from those in `routes`."""
        for item in items:
            public = safe_name(item["name"], self.max_name_length, routes)
            routes[public] = (source, item["name"])
            out.append(dict(item, name=public) if public != item["name"] else item)

    async def tools(self) -> list:
        tools, routes = [], {}
        for source in self.sources:
            self._publish(source, await source.list_tools(), routes, tools)
        self._routes = routes
        return tools

    async def route(self, public: str):
        if public not in self._routes:
            await self.tools()
        return self._routes.get(public)

    async def resources(self) -> list:
        listing, owners = [], {}
        for source in self.sources:
            if source.resources:
                for resource in await source.list_resources():
                    owners[resource["uri"]] = source
                    listing.append(resource)
        self._resources = owners
        return listing

    async def resource_templates(self) -> list:
        listing = []
        for source in self.sources:
            if source.resources:
                listing.extend(await source.list_resource_templates())
        return listing

    async def read_resource(self, uri: str, ctx):
        if uri not in self._resources:
            await self.resources()
        source = self._resources.get(uri)
        candidates = [source] if source is not None else [s for s in self.sources if s.resources]
        for candidate in candidates:  # a URI no listing named may match a template
            result = await candidate.read_resource(uri, ctx)
            if result is not None:
                return result
        raise McpError(RESOURCE_NOT_FOUND, "Resource not found: %s" % uri, {"uri": uri})

    async def prompts(self) -> list:
        listing, routes = [], {}
        for source in self.sources:
            if getattr(source, "prompts", False):
                self._publish(source, await source.list_prompts(), routes, listing)
        self._prompts = routes
        return listing

    async def get_prompt(self, public: str, arguments: dict, ctx):
        if public not in self._prompts:
            await self.prompts()
        route = self._prompts.get(public)
        if route is None:
            raise McpError(INVALID_PARAMS, "Unknown prompt: %s" % public)
        return await route[0].get_prompt(route[1], arguments, ctx)

    async def close(self):
        for source in self.sources:
            await source.close()


def paginate(items: list, cursor, page_size: int = PAGE_SIZE):
    """Return (page, next_cursor) for an opaque cursor; a bad cursor is -32602."""
    start = 0
    if cursor is not None:
        if not isinstance(cursor, str) or not re.fullmatch(r"o[0-9]{1,9}", cursor) or int(cursor[1:]) > len(items):
            raise McpError(INVALID_PARAMS, "Invalid cursor: %r is not a cursor this server gave out" % (cursor,))
        start = int(cursor[1:])
    end = start + page_size
    return items[start:end], ("o%d" % end if end < len(items) else None)


# --------------------------------------------------------------------------
# Server: the MCP methods
# --------------------------------------------------------------------------

class Server:
    """The MCP methods over a Catalog, for one client session."""

    def __init__(self, catalog: Catalog, log: Log, title: str = "mcpstudio", instructions: str | None = None):
        self.catalog = catalog
        self.log = log
        self.title = title
        self.instructions = instructions
        self.session = None
        self.sessions = []  # handshake-era sessions past `initialized` (stdio: at most one)
        self._held_logs = []  # log notifications from before the client was ready
        self.methods = {
            "initialize": self.initialize,
            "ping": self.ping,
            "tools/list": self.tools_list,
            "tools/call": self.tools_call,
            "logging/setLevel": self.set_level,
        }
        if catalog.has_resources:
            self.methods.update({
                "resources/list": self.resources_list,
                "resources/read": self.resources_read,
                "resources/templates/list": self.resource_templates_list,
            })
        if catalog.has_prompts:
            self.methods.update({"prompts/list": self.prompts_list, "prompts/get": self.prompts_get})
        self._modern_methods = None  # 2026-07-28's methods, built on first use (section "modern")
        self.subscriptions = []  # (CallContext of a subscriptions/listen, what it subscribed to)

    @property
    def modern_methods(self) -> dict:
        if self._modern_methods is None:
            _need("modern")
            self._modern_methods = modern_methods(self)
        return self._modern_methods

    def dispatch(self, method: str, params: dict, ctx: CallContext):
        meta = params.get("_meta")
        if ctx.modern or method == "server/discover" or (type(meta) is dict and META_VERSION in meta):
            return self.dispatch_modern(method, params, ctx, meta)
        refusal = self.catalog.refusal
        if refusal is not None:
            raise refusal
        handler = self.methods.get(method)
        if handler is None:
            raise McpError(METHOD_NOT_FOUND, "Method not found: %s" % method)
        return handler(params, ctx)

    def server_info(self) -> dict:
        return {"name": "mcpstudio", "title": self.title, "version": __version__}

    def dispatch_modern(self, method: str, params: dict, ctx: CallContext, meta):
        _need("modern")  # compiled on the first 2026-07-28 request: older clients never pay for it
        return dispatch_modern(self, method, params, ctx, meta)

    def notification(self, method: str, params: dict, session=None):
        session = session or self.session
        if method == "notifications/initialized" and session is not None and session not in self.sessions:
            self.sessions.append(session)
            held, self._held_logs = self._held_logs, []
            for level, text, logger in held:
                session.log_to_client(level, text, logger)

    def forget(self, session):
        """A session ended (an HTTP session deleted or expired)."""
        if session in self.sessions:
            self.sessions.remove(session)

    # -- events from sources --------------------------------------------------

    def source_changed(self, source):
        for session in self.sessions:
            if self.catalog.dynamic:
                session.notify("notifications/tools/list_changed", {})
            if source.resources:
                session.notify("notifications/resources/list_changed", {})
            if getattr(source, "prompts", False):
                session.notify("notifications/prompts/list_changed", {})
        for ctx, wanted in list(self.subscriptions):  # 2026-07-28 clients, through subscriptions/listen
            meta = {"_meta": {META_SUBSCRIPTION: ctx.request_id}}
            for key, method, relevant in (
                    ("toolsListChanged", "notifications/tools/list_changed", True),
                    ("resourcesListChanged", "notifications/resources/list_changed", source.resources),
                    ("promptsListChanged", "notifications/prompts/list_changed", getattr(source, "prompts", False))):
                if wanted.get(key) and relevant:
                    ctx.notify(method, meta)

    def source_log(self, level: str, text: str, logger: str = "mcpstudio"):
        for session in self.sessions:
            session.log_to_client(level, text, logger)
        if not self.sessions and len(self._held_logs) < 100:
            self._held_logs.append((level, text, logger))

    # -- methods ------------------------------------------------------------------

    def capabilities(self) -> dict:
        capabilities = {"tools": {"listChanged": self.catalog.dynamic}, "logging": {}}
        if self.catalog.has_resources:
            capabilities["resources"] = {"listChanged": self.catalog.dynamic}
        if self.catalog.has_prompts:
            capabilities["prompts"] = {"listChanged": self.catalog.dynamic}
        return capabilities

    def initialize(self, params, ctx):
        requested = params.get("protocolVersion")
        version = requested if requested in PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        client = params.get("clientInfo")
        client = client if isinstance(client, dict) else {}
        self.log.debug("initialize from %s %s, protocol %s (answering %s)",
                       client.get("name", "?"), client.get("version", "?"), requested, version)
        result = {
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": self.server_info(),
        }
        if self.instructions:
            result["instructions"] = self.instructions
        self.catalog.session_started()
        return result

    def ping(self, params, ctx):
        return {}

    async def tools_list(self, params, ctx):
        return _page("tools", await self.catalog.tools(), params)

    async def tools_call(self, params, ctx):
        name, arguments = _name_and_arguments(params, "tools/call")
        route = await self.catalog.route(name)
        if route is None:
            known = [t["name"] for t in await self.catalog.tools()]
            listed = ", ".join(known[:20]) + (" and %d more" % (len(known) - 20) if len(known) > 20 else "")
            raise McpError(INVALID_PARAMS, "Unknown tool: %s (this server has: %s)" % (name, listed or "no tools"))
        source, original = route
        return await source.call_tool(original, arguments, ctx)

    async def resources_list(self, params, ctx):
        return _page("resources", await self.catalog.resources(), params)

    async def resources_read(self, params, ctx):
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise McpError(INVALID_PARAMS, "Invalid params: resources/read needs a string `uri`")
        return await self.catalog.read_resource(uri, ctx)

    async def resource_templates_list(self, params, ctx):
        return _page("resourceTemplates", await self.catalog.resource_templates(), params)

    async def prompts_list(self, params, ctx):
        return _page("prompts", await self.catalog.prompts(), params)

    async def prompts_get(self, params, ctx):
        name, arguments = _name_and_arguments(params, "prompts/get")
        return await self.catalog.get_prompt(name, arguments, ctx)

    def set_level(self, params, ctx):
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise McpError(INVALID_PARAMS, "Invalid level %r: use one of %s" % (level, ", ".join(LOG_LEVELS)))
        ctx.session.log_level = level
        return {}


def _name_and_arguments(params: dict, method: str) -> tuple:
    """`name` and `arguments` of tools/call and prompts/get, checked (-32602 if malformed)."""
    name = params.get("name")
    if not isinstance(name, str):
        raise McpError(INVALID_PARAMS, "Invalid params: %s needs a string `name`" % method)
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise McpError(INVALID_PARAMS, "Invalid params: `arguments` must be an object")
    return name, arguments


def _page(key: str, items: list, params: dict) -> dict:
    page, next_cursor = paginate(items, params.get("cursor"))
    result = {key: page}
    if next_cursor:
        result["nextCursor"] = next_cursor
    return result


# --------------------------------------------------------------------------
# The 2026-07-28 era: per-request `_meta`, discovery, subscriptions
# --------------------------------------------------------------------------
# Compiled on the first request that speaks it (see "Sections compiled on
# first use" at the top), so handshake-era clients never pay for it.
_section('modern', source=r'''
def modern_methods(server) -> dict:
    """The methods of the era: no handshake, ping or setLevel; discovery and subscriptions."""
    methods = {m: h for m, h in server.methods.items() if m not in ("initialize", "ping", "logging/setLevel")}
    methods["server/discover"] = lambda params, ctx: discover(server, params, ctx)
    if server.catalog.dynamic:
        methods["subscriptions/listen"] = lambda params, ctx: listen(server, params, ctx)
    return methods


def dispatch_modern(server, method: str, params: dict, ctx: CallContext, meta):
    """A 2026-07-28 request: checked `_meta`, then served statelessly; results marked complete."""
    ctx.modern = True
    if (not isinstance(meta, dict) or not isinstance(meta.get(META_VERSION), str)
            or not isinstance(meta.get(META_CAPABILITIES), dict)):
        raise McpError(INVALID_PARAMS, "Invalid params: a %s request needs `_meta` with `%s` and `%s`"
                       % (MODERN_VERSIONS[0], META_VERSION, META_CAPABILITIES))
    if meta[META_VERSION] not in MODERN_VERSIONS:
        raise McpError(UNSUPPORTED_VERSION, "Unsupported protocol version",
                       {"supported": list(MODERN_VERSIONS), "requested": meta[META_VERSION]})
    level = meta.get(META_LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        raise McpError(INVALID_PARAMS, "Invalid params: `%s` must be one of %s" % (META_LOG_LEVEL, ", ".join(LOG_LEVELS)))
    ctx.level = level
    refusal = server.catalog.refusal
    if refusal is not None:
        raise refusal
    handler = server.modern_methods.get(method)
    if handler is None:
        gone = method in ("initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe")
        raise McpError(METHOD_NOT_FOUND, "Method not found: %s%s" % (
            method, " (not part of protocol %s)" % MODERN_VERSIONS[0] if gone else ""))
    result = handler(params, ctx)
    if asyncio.iscoroutine(result):
        return _modern_result(server, method, result)
    return _complete(server, method, result)


async def _modern_result(server, method, coroutine):
    try:
        result = await coroutine
    except McpError as exc:
        if exc.code == RESOURCE_NOT_FOUND:  # in 2026-07-28 an unknown resource is invalid params
            raise McpError(INVALID_PARAMS, exc.message, exc.data)
        raise
    return _complete(server, method, result)


_CACHEABLE = frozenset(("server/discover", "tools/list", "prompts/list", "resources/list",
                        "resources/templates/list", "resources/read"))


def _complete(server, method: str, result: dict) -> dict:
    result = dict(result, resultType="complete")
    result["_meta"] = dict(result.get("_meta") or (), **{META_SERVER_INFO: server.server_info()})
    if method in _CACHEABLE:
        result.setdefault("ttlMs", 0 if server.catalog.dynamic else 300000)
        result.setdefault("cacheScope", "public")
    return result


def discover(server, params, ctx):
    """`server/discover` (2026-07-28): versions, capabilities and identity, cacheable."""
    result = {"supportedVersions": list(MODERN_VERSIONS + PROTOCOL_VERSIONS),
              "capabilities": server.capabilities()}
    if server.instructions:
        result["instructions"] = server.instructions
    server.catalog.session_started()
    return result


async def listen(server, params, ctx):
    """`subscriptions/listen` (2026-07-28): list changes for as long as the client listens."""
    wanted = params.get("notifications")
    wanted = wanted if isinstance(wanted, dict) else {}
    offered = {"toolsListChanged": True, "resourcesListChanged": server.catalog.has_resources,
               "promptsListChanged": server.catalog.has_prompts}
    granted = {key: True for key, ok in offered.items() if ok and wanted.get(key) is True}
    ctx.notify("notifications/subscriptions/acknowledged",
               {"_meta": {META_SUBSCRIPTION: ctx.request_id}, "notifications": granted})
    entry = (ctx, granted)
    server.subscriptions.append(entry)
    try:
        await asyncio.get_running_loop().create_future()  # until the client cancels it
    finally:
        server.subscriptions.remove(entry)
''')


async def serve_stdio(server: Server, runner: ProcessRunner, log: Log, in_fd: int, out_fd: int) -> int:
    """Serve `server` on the given descriptors until stdin closes or a signal arrives."""
    loop = asyncio.get_running_loop()
    transport = StdioTransport(in_fd, out_fd, log)
    session = Session(transport, server.dispatch, log, server.notification)
    server.session = session
    server.catalog.start(server)
    stopping = loop.create_future()

    def stop(reason):
        if not stopping.done():
            stopping.set_result(reason)
            log.debug("stopping: %s", reason)

    transport.start(loop, session.receive, lambda: stop("stdin closed"))
    _on_stop_signals(loop, stop, server.catalog.reload_signal())
    reason = await stopping
    # On EOF the client has said all it will; let what it asked finish briefly.
    await session.cancel_all(grace=EOF_DRAIN if reason == "stdin closed" else 0)
    await server.catalog.close()  # servers first: closing their stdin lets them exit cleanly
    await runner.stop_all()
    runner.close_watchdog()
    transport.close()
    return 0


# --------------------------------------------------------------------------
# Configuration: the one place a config file becomes sources
# --------------------------------------------------------------------------
# A JSON file (comments and trailing commas allowed) of tools, resources and
# script folders. Every mistake in it stops startup with one message that
# names the file and the line and column, or the key path, and says what is
# expected. `${VAR}` expands from the environment in the fields listed in
# _EXPANDED, never in command templates or tool arguments.
# Compiled on first use (see "Sections compiled on first use" at the top).
_section('config', requires=("scripts",), source=r'''
CONFIG_TIMEOUT = 30.0   # seconds, when neither the tool, the file nor --timeout says
_TOP_KEYS = ("name", "description", "instructions", "working_directory", "environment", "tools",
             "resources", "scripts", "command", "timeout", "separator", "$schema")
_UPSTREAM_KEYS = ("mcpServers", "servers", "namespaces", "defaultNamespace", "defaultNamespaceId")
_TOOL_KEYS = ("name", "title", "description", "command", "command_template", "parameters", "timeout",
              "working_directory", "environment", "stdin", "shell", "annotations", "allow_dash_values")
_PARAMETER_KEYS = ("type", "description", "required", "default", "enum", "items")
_RESOURCE_KEYS = ("uri", "name", "title", "description", "command", "mime_type", "mimeType", "timeout",
                  "working_directory", "environment")
_SCRIPTS_KEYS = ("path", "include", "exclude")
_ANNOTATIONS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint", "title")
_PARAMETER_TYPES = ("string", "integer", "number", "boolean", "array")
_ENV_REFERENCE = re.compile(
    r"\$\$|\$\{(?:(?:ENV|env):)?([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)((?:[^{}]|\$\{[^{}]*\})*))?\}")


def strip_json_comments(text: str) -> str:
    """Blank out // and /* */ comments and trailing commas, keeping every line and column."""
    def outside_strings(text, handle):
        out, i, n = [], 0, len(text)
        while i < n:
            if text[i] == '"':
                end = i + 1
                while end < n and text[end] != '"':
                    end += 2 if text[end] == "\\" else 1
                out.append(text[i:end + 1])
                i = end + 1
            else:
                i = handle(text, i, out)
        return "".join(out)

    def comment(text, i, out):
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = len(text) if end < 0 else end + 2
        else:
            out.append(text[i])
            return i + 1
        out.append(re.sub(r"[^\n]", " ", text[i:end]))
        return end

    def trailing_comma(text, i, out):
        out.append(" " if text[i] == "," and re.match(r"\s*[\]}]", text[i + 1:i + 4096]) else text[i])
        return i + 1
    return outside_strings(outside_strings(text, comment), trailing_comma)


class ConfigLoader:
    """Reads one config file into sources; every error names the file and the place."""

    def __init__(self, path: str, environ=None):
        self.path = os.path.abspath(os.path.expanduser(path))
        self.folder = os.path.dirname(self.path)
        self.environ = os.environ if environ is None else environ
        self.secrets = []  # expanded environment values, masked in logs

    def error(self, where: str, message: str) -> ConfigError:
        return ConfigError("%s: %s: %s" % (self.path, where, message) if where else "%s: %s" % (self.path, message))

    def read(self) -> dict:
        try:
            with open(self.path, encoding="utf-8-sig") as f:
                text = f.read()
        except FileNotFoundError:
            raise ConfigError("%s: no such file (create one with: mcpstudio init NAME --command CMD -o %s)"
                              % (self.path, self.path))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError("%s: cannot read it: %s" % (self.path, exc))
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
            raise ConfigError("%s: %s" % (self.path, exc))
        if not isinstance(data, dict):
            raise self.error("", "the file must hold a JSON object ({...}), not %s" % _type_name(data))
        return data

    # -- checks ---------------------------------------------------------------

    def keys(self, obj, allowed, where: str):
        if not isinstance(obj, dict):
            raise self.error(where, "expected an object, not %s" % _type_name(obj))
        for key in obj:
            if key not in allowed:
                import difflib
                close = difflib.get_close_matches(key, allowed, 1, 0.6)
                hint = " (did you mean `%s`?)" % close[0] if close else " (known keys: %s)" % ", ".join(allowed)
                raise self.error("%s.%s" % (where, key) if where else key, "unknown key%s" % hint)

    def get(self, obj: dict, key: str, kind, where: str, default=None):
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

    def expand(self, value: str, where: str) -> str:
        """Expand ${VAR}, ${VAR:-default}, ${ENV:VAR}, ${env:VAR}; $$ is a dollar."""
        def substitute(match):
            if match.group() == "$$":
                return "$"
            name, operator, default = match.group(1), match.group(2), match.group(3)
            value = self.environ.get(name)
            if value is not None and (value != "" or operator != ":-"):
                self.secrets.append(value)
                return value
            if operator is not None:
                return self.expand(default, where)  # ${X:-fallback} and ${X-fallback}; the default may use ${Y}
            raise self.error(where, "${%s} is not set; set it, or give a default: ${%s:-value}" % (name, name))
        return _ENV_REFERENCE.sub(substitute, value)

    def folder_path(self, value: str, where: str) -> str:
        path = os.path.join(self.folder, os.path.expanduser(self.expand(value, where)))
        if not os.path.isdir(path):
            raise self.error(where, "no such folder: %s" % path)
        return os.path.normpath(path)

    def environment(self, obj: dict, where: str, key: str = "environment") -> dict:
        """obj[key] as variables: names checked, values strings with ${VAR} expanded."""
        env = self.get(obj, key, dict, where, {})
        out, field = {}, key
        for key, value in env.items():
            here = _join(where, "%s.%s" % (field, key))
            if not key or "=" in key or "\0" in key:
                raise self.error(here, "not a usable variable name (empty, or holds = or a NUL)")
            if not isinstance(value, (str, int, float)) or isinstance(value, bool):
                raise self.error(here, "expected a string")
            out[key] = self.expand(str(value), here)
            if "\0" in out[key]:
                raise self.error(here, "a value cannot hold a NUL character")
        return out

    # -- the file -----------------------------------------------------------------

    def load(self, runner: ProcessRunner, log: Log, base: RunSettings, separator: str | None = None,
             script_options: dict | None = None) -> tuple:
        """Return (sources, info): info has the file's name, description and instructions.

        `script_options` (help_timeout, rescan) apply to the file's script folders.
        """
        data = self.read()
        self.keys(data, _TOP_KEYS + _UPSTREAM_KEYS, "")
        info = {key: self.get(data, key, str, "") for key in ("name", "description", "instructions", "command")}
        info["separator"] = None
        env = base.env
        file_env = self.environment(data, "")
        if file_env:
            env = dict(env or os.environ)
            env.update(file_env)
        cwd = base.cwd
        if "working_directory" in data:
            cwd = self.folder_path(self.get(data, "working_directory", str, ""), "working_directory")
        timeout = self.timeout(data, "")
        settings = RunSettings(env=env, cwd=cwd, timeout=timeout or base.timeout or CONFIG_TIMEOUT,
                               max_output=base.max_output, max_concurrency=base.max_concurrency,
                               allow_dash_values=base.allow_dash_values)
        tools, names = [], {}
        for index, spec in enumerate(self.get(data, "tools", list, "", [])):
            tool = self.tool(spec, "tools[%d]" % index, runner, settings)
            if tool.name in names:
                raise self.error("tools[%d].name" % index, "`%s` is already the name of tools[%d]" % (tool.name, names[tool.name]))
            names[tool.name] = index
            tools.append(tool)
        resources = [self.resource(spec, "resources[%d]" % i, runner, settings)
                     for i, spec in enumerate(self.get(data, "resources", list, "", []))]
        sources = []
        if tools or resources:
            sources.append(TemplateTools(tools, resources))
        separator = separator or self.get(data, "separator", str, "", "__")
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,8}", separator):
            raise self.error("separator", "use 1 to 8 of the characters A-Z a-z 0-9 _ -")
        for index, entry in enumerate(self.get(data, "scripts", list, "", [])):
            where = "scripts[%d]" % index
            if isinstance(entry, str):
                entry = {"path": entry}
            self.keys(entry, _SCRIPTS_KEYS, where)
            root = self.folder_path(self.get(entry, "path", str, where, ""), _join(where, "path"))
            globs = {key: self.get(entry, key, list, where, []) for key in ("include", "exclude")}
            for key, patterns in globs.items():
                if not all(isinstance(p, str) for p in patterns):
                    raise self.error(_join(where, key), "expected a list of glob strings")
            sources.append(ScriptDirectory(root, runner, settings, log, separator=separator,
                                           **globs, **(script_options or {})))
        info["separator"] = separator
        info["upstream"] = None
        if any(key in data for key in _UPSTREAM_KEYS):  # other MCP servers: the aggregator
            _need("aggregator")
            info["upstream"] = read_upstreams(self, data, timeout or base.timeout)
        info["local_key"] = json.dumps({k: v for k, v in data.items() if k not in _UPSTREAM_KEYS},
                                       sort_keys=True, default=str)
        return sources, info

    def tool(self, spec, where: str, runner: ProcessRunner, settings: RunSettings) -> CommandTool:
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
        template = self.template(self.get(spec, key, str, where), _join(where, key))
        shell = self.get(spec, "shell", bool, where, False)
        if shell and template.substituted:
            raise self.error(_join(where, key), "`%s` stands inside $( ) or backticks, where a value cannot be "
                             "quoted safely; pass it as its own word and let the script use it"
                             % template.substituted[0])
        stdin = None
        if "stdin" in spec:
            stdin = self.template(self.get(spec, "stdin", str, where), _join(where, "stdin"), text=True)
        if "parameters" in spec:
            schema, defaults = self.parameters(spec["parameters"], _join(where, "parameters"))
        else:
            schema, defaults = template.input_schema(), {}
        for part, used in ((key, template), ("stdin", stdin)):
            if used is not None:
                self.bind(used, schema["properties"], _join(where, part),
                          "parameter" if "parameters" in spec else "field")
        overrides = self.run_overrides(spec, where, settings)
        if "allow_dash_values" in spec:
            overrides["allow_dash_values"] = self.get(spec, "allow_dash_values", bool, where)
        annotations = self.get(spec, "annotations", dict, where, {})
        self.keys(annotations, _ANNOTATIONS, _join(where, "annotations"))
        return CommandTool(name, template, runner, settings.derive(**overrides),
                           description=self.get(spec, "description", str, where),
                           title=self.get(spec, "title", str, where), annotations=annotations,
                           schema=schema, defaults=defaults, stdin=stdin, shell=shell)

    def timeout(self, obj: dict, where: str):
        """obj["timeout"] as positive seconds, or None when it is not given."""
        value = self.get(obj, "timeout", (int, float), where)
        if value is not None and value <= 0:
            raise self.error(_join(where, "timeout"), "expected a positive number of seconds")
        return value

    def run_overrides(self, spec: dict, where: str, settings: RunSettings) -> dict:
        """A tool's or resource's own timeout, working_directory and environment."""
        overrides = {}
        if "timeout" in spec:
            overrides["timeout"] = self.timeout(spec, where)
        if "working_directory" in spec:
            overrides["cwd"] = self.folder_path(self.get(spec, "working_directory", str, where),
                                                _join(where, "working_directory"))
        env = self.environment(spec, where)
        if env:
            overrides["env"] = dict(settings.env or os.environ, **env)
        return overrides

    def template(self, source: str, where: str, text: bool = False) -> CommandTemplate:
        try:
            return CommandTemplate(source, text=text)
        except TemplateError as exc:
            raise self.error(where, "bad template: %s" % exc)

    def parameters(self, params, where: str) -> tuple:
        """CLI-as-MCP parameters to (schema, defaults); `required` defaults to true unless a default is given."""
        if not isinstance(params, dict):
            raise self.error(where, "expected an object of parameters, not %s" % _type_name(params))
        properties, required, defaults = {}, [], {}
        for name, spec in params.items():
            here = _join(where, name)
            if not re.fullmatch(_FIELD_NAME, name):
                raise self.error(here, "a parameter name is letters, digits, _ and -, not starting with a digit")
            self.keys(spec, _PARAMETER_KEYS, here)
            kind = self.get(spec, "type", str, here, "string")
            if kind not in _PARAMETER_TYPES:
                import difflib
                close = difflib.get_close_matches(kind, _PARAMETER_TYPES + ("int", "float", "bool", "list"), 1, 0.5)
                alias = {"int": "integer", "float": "number", "bool": "boolean", "list": "array"}
                hint = " (did you mean `%s`?)" % alias.get(close[0], close[0]) if close else ""
                raise self.error(_join(here, "type"), "expected one of %s, not %s%s"
                                 % (", ".join(_PARAMETER_TYPES), json.dumps(kind), hint))
            prop = {"type": kind}
            if kind == "array":
                items = self.get(spec, "items", dict, here, {"type": "string"})
                prop["items"] = items
            if kind == "array" and prop["items"].get("type", "string") not in _PARAMETER_TYPES[:4]:
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
            if "default" in spec:
                problems = validate(spec["default"], prop, "the default")
                if problems:
                    raise self.error(_join(here, "default"), problems[0])
                prop["default"] = defaults[name] = spec["default"]
            if self.get(spec, "required", bool, here, "default" not in spec):
                required.append(name)
            properties[name] = prop
        schema = {"type": "object", "properties": properties, "additionalProperties": False}
        if required:
            schema["required"] = required
        return schema, defaults

    def bind(self, template: CommandTemplate, properties: dict, where: str, declared_by: str = "parameter"):
        """Point the template's fields and blocks at declared parameters; refuse undeclared ones.

        `declared_by="field"`: the schema came from the template's own fields
        (the `command` form), so a block must test one of those fields.
        """
        def declared(name):
            for key in (name, name.replace("-", "_")):
                if key in properties:
                    return key
            import difflib
            close = difflib.get_close_matches(name, list(properties), 1, 0.6)
            what = "a declared parameter" if declared_by == "parameter" else "a field of the template"
            raise self.error(where, "the template uses `%s`, which is not %s%s" % (
                name, what, " (did you mean `%s`?)" % close[0] if close else
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

    def resource(self, spec, where: str, runner: ProcessRunner, settings: RunSettings):
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
        overrides = self.run_overrides(spec, where, settings)
        mime = self.get(spec, "mime_type", str, where) or self.get(spec, "mimeType", str, where) or "text/plain"
        return CommandResource(uri, self.get(spec, "name", str, where) or uri, command, runner,
                               settings.derive(**overrides), pattern, params,
                               description=self.get(spec, "description", str, where),
                               title=self.get(spec, "title", str, where), mime_type=mime)


def _as_tuple(kind) -> tuple:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return kinds + ((float,) if int in kinds else ())


def _join(where: str, key: str) -> str:
    return "%s.%s" % (where, key) if where else key


def _uri_pattern(uri: str) -> tuple:
    """A regex matching the URIs of a URI template, and its parameter names."""
    params, parts, last = [], [], 0
    for match in re.finditer(r"\{(%s)\}" % _FIELD_NAME, uri):
        parts.append(re.escape(uri[last:match.start()]))
        params.append(match.group(1).replace("-", "_"))
        parts.append("(?P<%s>[^/?#]+)" % params[-1])
        last = match.end()
    parts.append(re.escape(uri[last:]))
    return (re.compile("".join(parts)) if params else None), params


class CommandResource:
    """A resource (or resource template) whose read runs a command."""

    def __init__(self, uri, name, template, runner, settings, pattern, params,
                 description=None, title=None, mime_type="text/plain"):
        self.uri, self.name, self.template, self.runner, self.settings = uri, name, template, runner, settings
        self.pattern, self.params = pattern, params
        self.description, self.title, self.mime_type = description, title, mime_type

    def definition(self) -> dict:
        entry = {"uriTemplate" if self.pattern else "uri": self.uri, "name": self.name, "mimeType": self.mime_type}
        if self.title:
            entry["title"] = self.title
        if self.description:
            entry["description"] = self.description
        return entry

    def match(self, uri: str):
        """The parameter values for `uri`, or None if it is not this resource's."""
        if self.pattern is None:
            return {} if uri == self.uri else None
        found = self.pattern.fullmatch(uri)
        if found is None:
            return None
        from urllib.parse import unquote
        return {key: unquote(value) for key, value in found.groupdict().items()}

    async def read(self, uri: str, values: dict) -> dict:
        try:
            argv = self.template.render(values, self.settings.allow_dash_values)
        except ToolError as exc:
            raise McpError(INVALID_PARAMS, "Cannot read %s: %s" % (uri, exc))
        async with self.settings.slots:
            result = await self.runner.run(argv, env=self.settings.env, cwd=self.settings.cwd,
                                           timeout=self.settings.timeout, output_limit=self.settings.max_output)
        failure = describe_failure(result, self.settings.timeout)
        if failure:
            detail = result.stderr.decode("utf-8", "replace").strip()[-500:]
            raise McpError(INTERNAL_ERROR, "Reading %s failed: %s%s" % (uri, failure, (" " + detail) if detail else ""),
                           {"uri": uri, "exitCode": result.returncode})
        block = output_content(result.stdout, uri, result.stdout_cut > 0)
        content = {"uri": uri, "mimeType": self.mime_type}
        if block["type"] == "text":
            content["text"] = block["text"]
        else:
            content["blob"] = block.get("data") or block["resource"]["blob"]
            content["mimeType"] = block.get("mimeType") if block["type"] == "image" else self.mime_type
        return {"contents": [content]}


class Block:
    """`{#if name}...{#else}...{/if}` in a command template."""

    __slots__ = ("name", "key", "then", "otherwise")

    def __init__(self, name: str):
        self.name = name
        self.key = name.replace("-", "_")
        self.then = []
        self.otherwise = None

    def branch(self, arguments: dict) -> list:
        value = arguments.get(self.key)
        given = value is not None and value is not False and value != "" and value != []
        return self.then if given else (self.otherwise or [])


_BLOCK = re.compile(r"\{#if\s+(%s)\s*\}|\{#else\}|\{/if\}" % _FIELD_NAME)


class CommandTemplate(Template):
    """A config file's command template: one string, split into words like a shell would.

    Grammar (fields and blocks are found before the words are split)::

        template ::= node*
        node     ::= block | field | flag | group | quote | space | char
        block    ::= '{#if' NAME '}' node* [ '{#else}' node* ] '{/if}'
        quote    ::= "'" ... "'" | '"' ... '"'   (fields still work inside quotes)
        space    ::= whitespace outside quotes: ends a word

    Quotes and backslashes work as in a POSIX shell, but no shell runs:
    values are never split, globbed or re-substituted. Inside quotes only
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

    def __init__(self, source: str, text: bool = False):
        self.source = [source]
        self.text_mode = text
        self.fields = {}
        self.blocks = []
        self.substituted = []  # fields written inside $( ) or backticks
        self.nodes = self._parse(source)
        if not text:
            self._check_command_word()
            try:
                check_code_fields(self.words_for(None), self.source)
            except TemplateError as exc:
                raise self._error(str(exc))

    def _error(self, message: str, at: int | None = None) -> TemplateError:
        where = " at column %d" % (at + 1) if at is not None else ""
        return TemplateError("%s%s of %r" % (message, where, self.source[0]))

    def _parse(self, source: str) -> list:
        root, stack, quote, subst, i = [], [], None, [], 0
        current = root
        while i < len(source):
            char = source[i]
            state = quote if not subst else "$"
            if char == "{" and source.startswith(("{#", "{/"), i):
                match = _BLOCK.match(source, i)
                if match is None:
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
                    if quote is None or following in '"\\$`':
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
                match = _FIELD.match(source, i)
                if match and (char == "{" or not self.text_mode):
                    field = self._field(match, 0, optional=bool(stack))
                    if subst:
                        self.substituted.append(field.name)
                    current.append(("f", field, state, match.group()))
                    i = match.end()
                    continue
                if _FIELD_START.match(source, i):
                    raise self._bad_description(source, i, 0)
                close = _closing_bracket(source, i) if char == "[" else 0
                if close:
                    inner = self._parse_word(source[i + 1:close], 0, True)
                    if any(not isinstance(p, str) for p in inner):
                        group = Group(inner)
                        if subst:
                            self.substituted.extend(f.name for f in group.fields)
                        current.append(("g", group, state, source[i:close + 1]))
                        i = close + 1
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

    def _tokens(self, nodes: list, arguments: dict | None = None):
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

    def _token_words(self, arguments: dict | None) -> list:
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

    def words_for(self, arguments: dict | None) -> list:
        """Split the chosen tokens into words of pieces (str, Field, Group)."""
        words = []
        for tokens, _ in self._token_words(arguments):
            word = []
            for kind, value, _, _ in tokens:
                if kind == "q":
                    value = ""  # an empty quoted word ('') is still a word
                if isinstance(value, str) and word and isinstance(word[-1], str):
                    word[-1] += value
                else:
                    word.append(value)
            words.append(word)
        return words

    @property
    def words(self):
        return self.words_for(None)

    def occurrences(self):
        """Every field as written, in groups and in both branches of every block."""
        for kind, value, _, _ in self._tokens(self.nodes):
            if kind == "f":
                yield value
            elif kind == "g":
                yield from value.fields

    def render(self, arguments: dict, allow_dash_values: bool = False, honour_double_dash: bool = True) -> list:
        return render_words(self.words_for(arguments), arguments, allow_dash_values, self.command_name(),
                            honour_double_dash)

    def render_text(self, arguments: dict) -> str:
        """The template as one string (stdin templates): values pasted in as text."""
        parts = []
        for kind, value, _, _ in self._tokens(self.nodes, arguments):
            if kind in "fg":
                if kind == "f" or value.given(arguments):
                    _render_pieces([value] if kind == "f" else value.pieces, arguments, parts)
            else:
                parts.append(value)
        return "".join(parts)

    def render_shell(self, arguments: dict) -> tuple:
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
            pieces = self.words_for_tokens(tokens)
            if not _render_pieces(pieces, arguments, [])[1]:
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

    @staticmethod
    def words_for_tokens(tokens) -> list:
        return [("" if kind == "q" else value) for kind, value, _, _ in tokens]

    def display(self) -> str:
        return self.source[0]


STARTER_CONFIG = """\
// mcpstudio config for %(name_comment)s. Comments and trailing commas are fine here.
//   serve it:  python3 mcpstudio.py serve --config %(file)s
//   check it:  python3 mcpstudio.py check --config %(file)s
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


def init_config(args: list) -> int:
    """`init NAME --command CMD [--description D] [-o FILE] [--force]`: write a starter config."""
    values = {"name": None, "command": None, "description": None, "output": None, "force": False}
    names = {"--command": "command", "--description": "description", "-o": "output", "--output": "output"}
    i = 0
    while i < len(args):
        arg, eq, inline = args[i].partition("=")
        if arg == "--force":
            values["force"] = True
        elif arg in names:
            if not eq:
                i += 1
                if i >= len(args):
                    raise UsageError("init: %s needs a value" % arg)
                inline = args[i]
            values[names[arg]] = inline
        elif arg.startswith("-") or values["name"] is not None:
            raise UsageError("init: unexpected %r; usage: mcpstudio init NAME --command CMD "
                             "[--description TEXT] [-o FILE] [--force]" % args[i])
        else:
            values["name"] = arg
        i += 1
    if not values["name"] or not values["command"]:
        raise UsageError("init needs a NAME and --command CMD, e.g. mcpstudio init git --command git")
    name = _UNSAFE_NAME_CHARS.sub("_", values["name"])
    output = values["output"] or name + ".json"
    if os.path.exists(output) and not values["force"]:
        sys.stderr.write("mcpstudio: error: %s exists; use --force to overwrite it\n" % output)
        return 1
    command = values["command"]
    import shlex
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise UsageError("init: --command %r: %s" % (command, exc))
    if not words:
        raise UsageError("init: --command is empty")
    quoted = _argv_text(words)
    text = STARTER_CONFIG % {
        "name_comment": re.sub(r"\s", " ", values["name"]), "name_json": json.dumps(values["name"]),
        "file": _argv_text([output]),
        "help_description_json": json.dumps("Show how to use %s." % command),
        "run_description_json": json.dumps("Run %s with arguments." % command),
        "args_description_json": json.dumps("Arguments for %s" % command),
        "version_name_json": json.dumps("%s version" % command),
        "description_json": json.dumps(values["description"] or "Tools for %s." % command),
        "help_json": json.dumps(name + "_help"), "run_json": json.dumps(name + "_run"),
        "help_command_json": json.dumps("%s --help" % quoted),
        "run_command_json": json.dumps("%s {args}{#if help} --help{/if}" % quoted),
        "uri_json": json.dumps("%s://version" % name.replace("_", "-")),
        "version_command_json": json.dumps("%s --version" % quoted)}
    with open(output, "w", encoding="utf-8") as f:
        f.write(text)
    prog = "mcpstudio" if not sys.argv[0].endswith(".py") else "python3 " + _argv_text([sys.argv[0]])
    print("wrote %s; check it with: %s check --config %s" % (output, prog, _argv_text([output])))
    return 0


def _example_value(name: str, prop: dict):
    """A value that shows what the parameter does in the rendered command."""
    if prop.get("enum"):
        return prop["enum"][0]
    kind = prop.get("type")
    return {"integer": 1, "number": 1.5, "boolean": True, "array": ["<%s>" % name]}.get(kind, "<%s>" % name)


def check_config(path: str, log: Log, options: dict) -> int:
    """`check --config FILE`: print what the file serves and the argv an example call runs."""
    server, _ = _build_server(options, [], log, config=path)
    print("%s: ok" % os.path.abspath(path))
    sources, hub = [], None
    for source in server.catalog.sources:
        if hasattr(source, "upstreams"):  # an Aggregator: the file's own sources, then its servers
            hub = source
            sources.extend(source.local)
        else:
            sources.append(source)
    for source in sources:
        if isinstance(source, ScriptDirectory):
            print("\nscripts: %s (discovered when served)" % source.root)
            continue
        if source.tools:
            print("\ntools:")
        for tool in source.tools.values():
            props = tool.schema.get("properties", {})
            required = tool.schema.get("required", [])
            import shutil
            program = tool.template.words[0][0] if not tool.shell else "sh"
            if not shutil.which(program, path=(tool.settings.env or os.environ).get("PATH")):
                print("  warning: %s: `%s` is not on PATH here" % (tool.name, program))
            used = {f.key for t in (tool.template, tool.stdin) if t is not None for f in t.occurrences()}
            used.update(b.key for b in getattr(tool.template, "blocks", ()))
            for key in props:
                if key not in used:
                    print("  warning: %s: parameter `%s` is declared but no template uses it" % (tool.name, key))
            example = {k: _example_value(k, v) for k, v in props.items()}
            try:
                argv = _argv_text(tool.argv(example))
            except ToolError as exc:
                argv = "(example refused: %s)" % exc
            print("  %s  %s" % (tool.name, tool.description))
            for key, prop in props.items():
                detail = ("required" if key in required else
                          "default %s" % json.dumps(prop["default"]) if "default" in prop else "optional")
                print("      %-16s %-8s %s" % (key, prop.get("type", "any"), detail))
            print("      example: %s" % argv)
        if source.command_resources:
            print("\nresources:")
        for resource in source.command_resources:
            kind = "template" if resource.pattern else "resource"
            print("  %-32s %-9s %-12s %s" % (resource.uri, kind, resource.mime_type, resource.template.display()))
    if hub is not None:
        print("\nMCP servers (tools as last cached; `mcpstudio status --check` starts them):")
        return print_status(hub.config_path, hub.plan, options["namespace"], log=log)
    return 0
''')


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
# manager tools. Namespaces choose which servers one process serves.
# Compiled on first use (see "Sections compiled on first use" at the top).
_section('aggregator', requires=("config",), source=r'''
import base64
import collections
import fnmatch
import hashlib

SERVER_NOT_FOUND = -32000     # the seed's codes; -32002 is the spec's "resource not found"
SERVER_START_FAILED = -32001
SERVER_NOT_RUNNING = -32003
SERVER_TIMEOUT = -32004       # the seed's "-32002 timeout", moved off the spec's code

START_TIMEOUT = 30.0          # seconds a server may take to start and list its tools
TOOL_TIMEOUT = 60.0           # seconds a forwarded request may take
LIST_WAIT = 5.0               # seconds tools/list waits for a server it had to start
LIST_PARALLEL = 4             # servers started at once for a listing
HEALTH_INTERVAL = 30.0        # seconds between pings of an idle server; 0 turns them off
HEALTH_TIMEOUT = 10.0         # seconds a ping may take before the server is restarted
STDIN_CLOSE_WAIT = 1.0        # seconds a server may take to exit once its stdin closes
LOG_LINES = 500               # lines of each server's stderr and lifecycle kept for server_logs
BACKOFF_FIRST = 1.0           # seconds before restarting a server that just failed; doubles
BACKOFF_MAX = 30.0
BACKOFF_WAIT = 2.0            # a call waits out a backoff this short; a longer one fails at once
UPSTREAM_CACHE_FORMAT = 1
MANAGER_PREFIX = "mcpstudio"

_SERVER_KEYS = ("command", "args", "cwd", "env", "type", "url", "headers", "disabled", "eager",
                "startupTimeout", "toolTimeout", "maxConcurrency", "tools", "healthCheckInterval")
_NAMESPACE_KEYS = ("servers", "tools", "description")
_FILTER_KEYS = ("allow", "deny")


class UpstreamError(McpError):
    """A routed request that could not be carried out; tools/call turns it into an isError result."""


def _server_id(key: str) -> str:
    return safe_name(key, 128)  # tool names are shortened where needed, ids only made safe


def _fingerprint(*parts) -> str:
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


class UpstreamSpec:
    """One configured server, as read from the file; `error` when the entry cannot be used."""

    def __init__(self, key: str, where: str):
        self.key, self.id, self.where = key, _server_id(key), where
        self.command, self.args, self.cwd, self.env, self.url = None, [], None, {}, None
        self.headers = {}
        self.transport = "stdio"
        self.disabled = self.eager = False
        self.startup_timeout, self.tool_timeout = START_TIMEOUT, TOOL_TIMEOUT
        self.max_concurrency = 0
        self.health_interval = HEALTH_INTERVAL
        self.allow, self.deny = [], []
        self.error = None
        self.secrets = []

    @property
    def launch(self) -> str:
        """What starts the server: a change here means a restart (and another cache entry)."""
        return _fingerprint(self.command, self.args, self.cwd, self.env, self.url, self.headers)

    @property
    def settings(self) -> str:
        return _fingerprint(self.launch, self.startup_timeout, self.tool_timeout, self.max_concurrency,
                            self.health_interval, self.allow, self.deny, self.disabled, self.error)

    def display(self) -> str:
        if self.url:
            return self.url
        return _argv_text([self.command or "?"] + self.args)


class UpstreamPlan:
    """The upstream part of a config: servers (in file order), namespaces and their choice."""

    def __init__(self, specs, namespaces, default, default_key):
        self.specs, self.namespaces, self.default, self.default_key = specs, namespaces, default, default_key


def read_upstreams(loader, data: dict, base_timeout) -> UpstreamPlan:
    """The `mcpServers`, `servers`, `namespaces` and `defaultNamespace` keys of a config.

    A mistake inside one server entry makes that server unusable (`spec.error`,
    shown by status, check and servers_list) and leaves the others running;
    mistakes that touch several (ids that collide, namespaces) stop startup.
    """
    specs, by_id = [], {}
    for group in ("mcpServers", "servers"):
        entries = loader.get(data, group, dict, "", {})
        for key, entry in entries.items():
            where = "%s.%s" % (group, key)
            spec = UpstreamSpec(key, where)
            try:
                _read_server(loader, spec, entry, where, base_timeout)
            except ConfigError as exc:
                spec.error = str(exc)
            if spec.id in by_id:
                other = by_id[spec.id]
                raise loader.error(where, "its id `%s` is also the id of %s (ids are the keys with characters "
                                          "other than A-Z a-z 0-9 _ - made _); rename one of them"
                                   % (spec.id, other.where))
            by_id[spec.id] = spec
            specs.append(spec)
    namespaces = {}
    for name, entry in loader.get(data, "namespaces", dict, "", {}).items():
        where = "namespaces.%s" % name
        if isinstance(entry, list):
            entry = {"servers": entry}
        loader.keys(entry, _NAMESPACE_KEYS, where)
        members = loader.get(entry, "servers", list, where, [])
        ids = []
        for index, member in enumerate(members):
            here = "%s.servers[%d]" % (where, index)
            if not isinstance(member, str):
                raise loader.error(here, "expected a server key (a string)")
            spec = next((s for s in specs if member in (s.key, s.id)), None)
            if spec is None:
                import difflib
                close = difflib.get_close_matches(member, [s.key for s in specs], 1, 0.6)
                raise loader.error(here, "no server %s is configured%s" % (json.dumps(member), (
                    " (did you mean %s?)" % json.dumps(close[0])) if close else
                    " (configured: %s)" % (", ".join(s.key for s in specs) or "none")))
            ids.append(spec.id)
        allow, deny = _read_filter(loader, entry, where)
        namespaces[name] = {"servers": ids, "allow": allow, "deny": deny,
                            "description": loader.get(entry, "description", str, where, "")}
    default_key = "defaultNamespace" if "defaultNamespace" in data else "defaultNamespaceId"
    default = loader.get(data, default_key, str, "")
    return UpstreamPlan(specs, namespaces, default, default_key)


def _read_filter(loader, entry: dict, where: str) -> tuple:
    tools = loader.get(entry, "tools", dict, where, {})
    loader.keys(tools, _FILTER_KEYS, _join(where, "tools"))
    lists = []
    for key in _FILTER_KEYS:
        patterns = loader.get(tools, key, list, _join(where, "tools"), [])
        if not all(isinstance(p, str) for p in patterns):
            raise loader.error(_join(where, "tools.%s" % key), "expected a list of glob patterns (strings)")
        lists.append(patterns)
    return tuple(lists)


def _read_server(loader, spec: UpstreamSpec, entry, where: str, base_timeout):
    if not isinstance(entry, dict):
        raise loader.error(where, "expected an object with `command` (and `args`, `env`, `cwd`), not %s"
                           % _type_name(entry))
    for key in entry:  # keys of other clients (autoApprove, timeout, ...) are accepted as they are
        if key not in _SERVER_KEYS:
            import difflib
            close = difflib.get_close_matches(key, _SERVER_KEYS, 1, 0.8)
            if close:
                raise loader.error(_join(where, key), "unknown key (did you mean `%s`?)" % close[0])
    spec.disabled = loader.get(entry, "disabled", bool, where, False)
    spec.eager = loader.get(entry, "eager", bool, where, False)
    kind = loader.get(entry, "type", str, where, "")
    if "url" in entry or kind in ("http", "sse", "streamable-http", "streamableHttp"):
        if kind not in ("", "http", "sse", "streamable-http", "streamableHttp"):
            raise loader.error(_join(where, "type"), "expected \"http\" or \"sse\" with a `url`, not %s" % json.dumps(kind))
        spec.transport = "sse" if kind == "sse" else "http"
        if "url" not in entry:
            raise loader.error(where, "a %s server needs a `url`" % spec.transport)
        spec.url = loader.expand(loader.get(entry, "url", str, where), _join(where, "url"))
        if not re.match(r"https?://[^/?#]+", spec.url):
            raise loader.error(_join(where, "url"), "expected an http:// or https:// URL, not %s" % json.dumps(spec.url))
        for key, value in loader.get(entry, "headers", dict, where, {}).items():
            here = _join(where, "headers.%s" % key)
            if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", key) or not isinstance(value, str) or "\n" in value:
                raise loader.error(here, "expected a header name and a one-line string value")
            spec.headers[key] = loader.expand(value, here)
            spec.secrets.append(spec.headers[key])  # Authorization and API keys, above all
    elif kind not in ("", "stdio"):
        raise loader.error(_join(where, "type"), "expected \"stdio\" (or \"http\"/\"sse\" with a `url`), not %s"
                           % json.dumps(kind))
    if spec.url is None and "command" not in entry:
        raise loader.error(where, "a server needs a `command` (the program that starts it) or a `url`")
    if spec.url is None:
        spec.command = loader.expand(loader.get(entry, "command", str, where), _join(where, "command"))
    if spec.url is None and not spec.command.strip():
        raise loader.error(_join(where, "command"), "is empty")
    args = loader.get(entry, "args", list, where, [])
    for index, arg in enumerate(args):
        if not isinstance(arg, (str, int, float)) or isinstance(arg, bool):
            raise loader.error(_join(where, "args[%d]" % index), "expected a string")
        spec.args.append(loader.expand(str(arg), _join(where, "args[%d]" % index)))
    if "cwd" in entry:
        spec.cwd = loader.folder_path(loader.get(entry, "cwd", str, where), _join(where, "cwd"))
    spec.env = loader.environment(entry, where, "env")
    spec.secrets.extend(spec.env.values())  # every value: tokens are often written in clear
    for key, attr in (("startupTimeout", "startup_timeout"), ("toolTimeout", "tool_timeout"),
                      ("healthCheckInterval", "health_interval")):
        value = loader.get(entry, key, (int, float), where)
        if value is not None:
            if not 0 <= value < 1e9 or (value == 0 and key != "healthCheckInterval"):
                raise loader.error(_join(where, key), "expected a positive number of seconds")
            setattr(spec, attr, float(value))
        elif key == "toolTimeout" and base_timeout:
            spec.tool_timeout = base_timeout
    spec.max_concurrency = loader.get(entry, "maxConcurrency", int, where, 0)
    if spec.max_concurrency < 0:
        raise loader.error(_join(where, "maxConcurrency"), "expected a positive whole number (0: no limit)")
    spec.allow, spec.deny = _read_filter(loader, entry, where)


def select_namespace(namespaces: dict, requested, default, default_key="defaultNamespace") -> tuple:
    """(name or None for every server, how it was chosen, error text or None): seed 004's rules."""
    names = ", ".join(sorted(namespaces)) or "none"
    how_to = ("choose one with --namespace NAME in this server's args, or set \"defaultNamespace\" "
              "in the config")
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
    return None, None, "no namespace chosen and the config has several (%s); %s" % (names, how_to)


def _match(name: str, patterns) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _passes(name: str, allow, deny) -> bool:
    return (not allow or _match(name, allow)) and not _match(name, deny)


# The runner's part in long-lived children (MCP servers), kept here with their only user.
def enable_watchdog(runner):
    """From now on, process groups are also stopped if this process dies (see _WATCHDOG)."""
    if runner.watchdog is None:
        try:
            runner.watchdog = _start_watchdog(runner.grace)
        except OSError as exc:
            runner.log.warning("cannot start the watchdog (children may outlive a killed mcpstudio): %s", exc)
        for pid in runner.groups:
            runner._tell_watchdog(b"+", pid)


async def runner_start(runner, argv, protocol_factory, *, env=None, cwd=None):
    """Start a long-running child (an MCP server) with all three pipes; end it with runner_end()."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        protocol_factory, *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=env, cwd=cwd, **_SPAWN_OPTIONS)
    runner._track(transport.get_pid())
    return transport, protocol


async def runner_end(runner, transport, exited, wait: float):
    """Close the child's stdin and give it `wait` seconds to exit; then stop its group.

    Runs to the end even if the caller is cancelled meanwhile."""
    ending = asyncio.ensure_future(_runner_end(runner, transport, exited, wait))
    while not ending.done():
        try:
            await asyncio.shield(ending)
        except asyncio.CancelledError:
            if ending.done():
                raise


async def _runner_end(runner, transport, exited, wait: float):
    pid = transport.get_pid()
    stdin = transport.get_pipe_transport(0)
    if stdin is not None:
        stdin.close()
    if not exited.done():
        await asyncio.wait([exited], timeout=wait)
    if not exited.done() or _group_alive(pid):
        await runner._stop(pid, exited)
    transport.close()
    runner._forget(pid)


class _UpstreamProtocol(asyncio.SubprocessProtocol):
    """Lines from a server's stdout (messages) and stderr (for its log), and its exit."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.exited = asyncio.get_running_loop().create_future()
        self.transport = None
        self.reason = None  # why it ended, once it has
        self.open_pipes = {1, 2}
        self._out = b""
        self._err = b""
        self._gone = False

    def connection_made(self, transport):
        self.transport = transport

    def pipe_data_received(self, fd, data):
        if fd == 1:
            if b"\n" not in data:
                self._out += data
                if len(self._out) > MAX_MESSAGE:
                    self.upstream.note("a message over %d bytes on stdout was discarded" % MAX_MESSAGE)
                    self._out = b""
                return
            lines = (self._out + data).split(b"\n")
            self._out = lines.pop()
            for line in lines:
                if line.strip():
                    self.upstream.received(line)
        else:
            lines = (self._err + data).split(b"\n")
            self._err = lines.pop()[-65536:]
            for line in lines:
                self.upstream.stderr_line(line.rstrip(b"\r").decode("utf-8", "replace"))

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
                self.upstream.stderr_line(self._err.decode("utf-8", "replace"))
            self.upstream.gone(self)


class _HttpChannel:
    """An upstream server reached by URL, spoken to with http.client in worker threads.

    Streamable HTTP: each message is a POST; its reply (JSON, or an SSE stream
    of notifications then the response) comes back on that POST. The older
    HTTP+SSE transport (`"type": "sse"`): one GET stream carries every message
    from the server, after an `endpoint` event names where to POST. TLS
    verifies certificates (SSL_CERT_FILE is honoured); HTTP(S)_PROXY and
    NO_PROXY are honoured; chunked replies are decoded by http.client.
    """

    def __init__(self, upstream):
        self.upstream = upstream
        self.spec = upstream.spec
        self.loop = asyncio.get_running_loop()
        self.reason = None            # why it is unusable, once it is
        self.transport = None
        self.session_id = None        # Mcp-Session-Id (handshake era)
        self.post_url = self.spec.url
        self.connections = {}         # request id -> the socket its reply comes on, to abort
        self.aborted = set()          # request ids cancelled by closing their connection
        self.sending = threading.Lock()  # messages leave in the order they were sent
        self.stream = None            # the HTTP+SSE transport's GET socket
        self.closed = False

    # -- connections --------------------------------------------------------------------

    def _connection(self, url: str, timeout):
        import http.client
        import urllib.parse
        import urllib.request
        parts = urllib.parse.urlsplit(url)
        secure = parts.scheme == "https"
        host, port = parts.hostname, parts.port or (443 if secure else 80)
        target = (parts.path or "/") + ("?" + parts.query if parts.query else "")
        context = None
        if secure:
            import ssl
            context = ssl.create_default_context()
        proxy = None if urllib.request.proxy_bypass_environment(host) else \
            urllib.request.getproxies_environment().get("https" if secure else "http")
        if proxy:
            proxy = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
            if secure:  # a CONNECT tunnel, TLS inside it
                connection = http.client.HTTPSConnection(proxy.hostname, proxy.port or 8080, timeout=timeout,
                                                         context=context)
                connection.set_tunnel(host, port)
            else:  # a plain proxy takes the whole URL
                connection = http.client.HTTPConnection(proxy.hostname, proxy.port or 8080, timeout=timeout)
                target = url
        elif secure:
            connection = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
        else:
            connection = http.client.HTTPConnection(host, port, timeout=timeout)
        return connection, target

    def _headers(self, message=None) -> dict:
        headers = {"Accept": "application/json, text/event-stream"}
        headers.update(self.spec.headers)
        if message is not None:
            headers["Content-Type"] = "application/json"
            up = self.upstream
            if up.modern:
                method = message.get("method")
                headers["MCP-Protocol-Version"] = MODERN_VERSIONS[0]
                if method:
                    headers["Mcp-Method"] = method
                    params = message.get("params") or {}
                    name = params.get("uri" if method == "resources/read" else "name")
                    if method in ("tools/call", "prompts/get", "resources/read") and isinstance(name, str):
                        plain = name.isascii() and name.isprintable() and name == name.strip() \
                            and not name.startswith("=?")
                        headers["Mcp-Name"] = name if plain else \
                            "=?base64?%s?=" % base64.b64encode(name.encode()).decode()
            elif up.protocol_version:
                headers["MCP-Protocol-Version"] = up.protocol_version
            if self.session_id:
                headers["Mcp-Session-Id"] = self.session_id
        return headers

    def _deliver(self, message):
        if isinstance(message, dict) and not self.closed:
            self.loop.call_soon_threadsafe(self.upstream.received_message, message)

    def _fail(self, reason: str):
        if not self.closed:
            self.loop.call_soon_threadsafe(self.upstream.lost, self, reason)

    @staticmethod
    def _events(response):
        """(event, data) of an SSE body, as they arrive."""
        event, data = "message", []
        while True:
            line = response.readline()
            if not line:
                return
            line = line.decode("utf-8", "replace").rstrip("\r\n")
            if not line:
                if data:
                    yield event, "\n".join(data)
                event, data = "message", []
            elif line.startswith("data:"):
                data.append(line[5:][1:] if line[5:6] == " " else line[5:])
            elif line.startswith("event:"):
                event = line[6:].strip()

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
            headers = dict(self.spec.headers, Accept="text/event-stream")
            connection.request("GET", target, headers=headers)
            self.stream = connection.sock  # kept: http.client lets go of it when the reply has no length
            response = connection.getresponse()
            if response.status != 200:
                raise OSError("GET %s answered HTTP %d" % (self.upstream.hub.log.mask(self.spec.url), response.status))
            self.stream.settimeout(None)  # a stream: quiet for as long as the server likes
            for event, data in self._events(response):
                if event == "endpoint":
                    self.post_url = urllib.parse.urljoin(self.spec.url, data.strip())
                    settle(endpoint=self.post_url)
                elif event == "message":
                    try:
                        self._deliver(json.loads(data))
                    except ValueError:
                        pass
            raise OSError("the server closed its event stream")
        except Exception as exc:  # the thread's boundary: report, never raise
            settle(error=OSError(str(exc)))
            self._fail("its event stream ended: %s" % exc)

    def send(self, message: dict):
        if not self.closed:
            threading.Thread(target=self._post, args=(message,), daemon=True).start()

    def _post(self, message: dict):
        import http.client
        request_id = message.get("id") if "method" in message else None
        connection = None
        try:
            with self.sending:  # in order: `initialized` before `tools/list`, a request before its cancel
                connection, target = self._connection(self.post_url, self.spec.startup_timeout)
                connection.request("POST", target, body=json.dumps(message).encode(), headers=self._headers(message))
                if request_id is not None:
                    connection.sock.settimeout(None)  # the request's own timer (toolTimeout) ends the wait
                    self.connections[request_id] = connection.sock
                    if request_id in self.aborted:
                        self.abort(request_id)
                    response = connection.getresponse()
                else:
                    response = connection.getresponse()  # a notification: accepted before the next leaves
                    response.read()
                    return
            if message.get("method") == "initialize" and response.getheader("Mcp-Session-Id"):
                self.session_id = response.getheader("Mcp-Session-Id").strip()
            kind = (response.getheader("Content-Type") or "").lower()
            if response.status == 202:
                response.read()
                return
            if response.status == 404 and self.session_id and message.get("method") != "initialize":
                response.read()
                self._fail("its session ended (HTTP 404)")
                return
            if "text/event-stream" in kind:
                for _, data in self._events(response):
                    try:
                        self._deliver(json.loads(data))
                    except ValueError:
                        pass
                return
            body = response.read()
            try:
                reply = json.loads(body)
            except ValueError:
                reply = None
            if not (isinstance(reply, dict) and ("result" in reply or "error" in reply)):
                reply = {"jsonrpc": "2.0", "id": request_id, "error": {
                    "code": METHOD_NOT_FOUND if response.status in (404, 405) else INTERNAL_ERROR,
                    "message": "HTTP %d %s" % (response.status, _clip(body.decode("utf-8", "replace"), 200))}}
            self._deliver(reply)
        except (OSError, http.client.HTTPException) as exc:
            if request_id is not None and request_id not in self.aborted:  # not cancelled on purpose
                self._fail("the connection failed: %s" % (exc or type(exc).__name__))
        finally:
            if request_id is not None:
                self.connections.pop(request_id, None)
                self.aborted.discard(request_id)
            if connection is not None:
                connection.close()

    def abort(self, request_id):
        """Close the connection a request waits on (how 2026-07-28 cancels over HTTP)."""
        self.aborted.add(request_id)
        sock = self.connections.pop(request_id, None)
        if sock is not None:
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
            message_headers = dict(self.spec.headers, **{"Mcp-Session-Id": self.session_id})

            def delete():
                try:
                    connection, target = self._connection(self.post_url, 5)
                    connection.request("DELETE", target, headers=message_headers)
                    connection.getresponse().read()
                    connection.close()
                except Exception:  # best effort: the server may be gone
                    pass
            threading.Thread(target=delete, daemon=True).start()
        for request_id in list(self.connections):
            self.abort(request_id)
        if self.stream is not None:
            try:
                self.stream.shutdown(2)
            except OSError:
                pass


class Upstream:
    """One upstream server: an MCP client over its stdio (or HTTP), started on demand and supervised."""

    def __init__(self, spec: UpstreamSpec, hub):
        self.spec = spec
        self.hub = hub
        self.log = hub.log
        self.state = "stopped"   # stopped, starting, running, failed, crashed, stopped-by-user, ...
        self.transport = self.protocol = self.pid = None
        self.pending = {}        # our request id -> future
        self.progress = {}       # our progress token -> the client's CallContext
        self.next_id = 0
        self.started_at = None
        self.last_error = spec.error
        self.failures = 0        # failed starts and crashes in a row: the backoff grows with them
        self.failed_at = 0.0
        self.restarts = 0
        self.lines = collections.deque(maxlen=LOG_LINES)
        self.recent = collections.deque(maxlen=5)  # stderr lines of the current run, for error messages
        self.listing = None      # what the running server listed: tools, resources, templates, prompts
        self.cached = None       # the same from the on-disk cache (None: not read, {}: none)
        self.capabilities, self.server_info, self.protocol_version = {}, {}, None
        self.user_stopped = False
        self._starting = None    # the task starting it
        self._stopping = None    # the task stopping it
        self.modern = False      # it speaks only 2026-07-28 (found when initialize is refused)
        self._health = None
        self._gate = None
        if spec.disabled:
            self.state = "disabled"
        elif spec.error:
            self.state = "misconfigured"

    # -- what it offers ---------------------------------------------------------

    @property
    def cache_path(self) -> str:
        return os.path.join(self.hub.cache_dir, "server-%s.json" % self.spec.launch)

    def known(self):
        """The latest listing: the running server's, else the cache's, else None."""
        if self.listing is not None:
            return self.listing
        if self.cached is None:
            self.cached = {}
            try:
                with open(self.cache_path, encoding="utf-8") as f:
                    entry = json.load(f)
                if entry.get("format") == UPSTREAM_CACHE_FORMAT and isinstance(entry.get("tools"), list):
                    self.cached = entry
            except (OSError, ValueError):
                pass
        return self.cached or None

    def _save_cache(self):
        entry = dict(self.listing, format=UPSTREAM_CACHE_FORMAT, server=self.spec.key, saved=time.time())
        try:
            os.makedirs(self.hub.cache_dir, exist_ok=True)
            tmp = "%s.%d.tmp" % (self.cache_path, os.getpid())
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(entry, f)
            os.replace(tmp, self.cache_path)
        except OSError as exc:
            self.log.debug("cannot write the tools cache %s: %s", self.cache_path, exc)

    def usable(self) -> bool:
        return self.state not in ("disabled", "misconfigured")

    # -- lifecycle ----------------------------------------------------------------

    def note(self, text: str):
        """A lifecycle line: to the server's log ring and to mcpstudio's debug log."""
        self.lines.append("%s mcpstudio: %s" % (time.strftime("%H:%M:%S"), text))
        self.log.debug("[%s] %s", self.spec.id, text)

    def stderr_line(self, text: str):
        self.lines.append("%s stderr: %s" % (time.strftime("%H:%M:%S"), text))
        self.recent.append(text)
        if self.log.enabled:
            self.log.debug("[%s] %s", self.spec.id, text)

    def _unavailable(self) -> UpstreamError | None:
        if self.state == "disabled":
            return UpstreamError(SERVER_NOT_RUNNING, "server `%s` is disabled in the config (`disabled: true`)"
                                 % self.spec.id)
        if self.state == "misconfigured":
            return UpstreamError(SERVER_START_FAILED, "server `%s` cannot start: %s" % (self.spec.id, self.spec.error))
        if self.user_stopped:
            return UpstreamError(SERVER_NOT_RUNNING, "server `%s` was stopped with servers_stop; start it with "
                                 "%s" % (self.spec.id, self.hub.manager_name("servers_start")))
        return None

    async def ready(self, ctx=None, wait_backoff=True):
        """Return once the server runs, starting it if needed; raise UpstreamError if it cannot."""
        if self.state == "running":
            return
        if self._stopping is not None and not self._stopping.done():
            await asyncio.wait([self._stopping])  # a restart or reload: start afresh once it is down
        problem = self._unavailable()
        if problem is not None:
            raise problem
        task = self.start(wait_backoff)
        if ctx is not None and ctx.progress_token is not None and not task.done():
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
        if self._starting is None or self._starting.done():
            self._starting = asyncio.ensure_future(self._start(wait_backoff))
            self._starting.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved
        return self._starting

    def backoff(self) -> float:
        """Seconds to wait before the next start may begin."""
        if not self.failures:
            return 0.0
        delay = min(BACKOFF_FIRST * 2 ** (self.failures - 1), BACKOFF_MAX)
        return max(0.0, self.failed_at + delay - time.monotonic())

    async def _start(self, wait_backoff):
        spec = self.spec
        if self._stopping is not None and not self._stopping.done():
            await asyncio.wait([self._stopping])
        problem = self._unavailable()
        if problem is not None:
            raise problem
        delay = self.backoff() if wait_backoff else 0.0
        if delay > BACKOFF_WAIT:
            raise UpstreamError(SERVER_START_FAILED, "server `%s` failed %.0f s ago (%s); the next try is in %.0f s"
                                % (spec.id, time.monotonic() - self.failed_at, self.last_error, delay))
        if self.state == "crashed":
            self.restarts += 1
        self.state = "starting"
        if delay:
            await asyncio.sleep(delay)
        self.modern = False
        if spec.url is not None:
            await self._connect()
            return
        enable_watchdog(self.hub.runner)
        env = dict(os.environ)
        env.update(spec.env)
        protocol = self.protocol = _UpstreamProtocol(self)
        self.recent.clear()
        argv = [spec.command] + spec.args
        self.note("starting: %s" % spec.display())
        started = time.monotonic()
        spawn = asyncio.ensure_future(runner_start(self.hub.runner, argv, lambda: protocol, env=env, cwd=spec.cwd))
        try:
            self.transport, _ = await asyncio.shield(spawn)  # a cancel mid-spawn must not lose the child
        except asyncio.CancelledError:
            self.protocol = None
            spawn.add_done_callback(self._end_orphan)
            raise
        except (OSError, ValueError) as exc:
            self.protocol = None
            hint = ""
            if isinstance(exc, FileNotFoundError) and " " in spec.command.strip():
                hint = " (put the arguments in `args`: \"command\": %s, \"args\": [...])" % json.dumps(spec.command.split()[0])
            elif isinstance(exc, FileNotFoundError):
                hint = " (is `%s` installed and on PATH? client configs often need an absolute path)" % spec.command
            raise self._failed("cannot run %s: %s%s" % (spec.command, exc.strerror or exc, hint))
        self.pid = self.transport.get_pid()
        self.note("started pid %d" % self.pid)
        await self._shake_hands(started)

    async def _connect(self):
        """Start talking to a server reached by URL (Streamable HTTP, or the older HTTP+SSE)."""
        started = time.monotonic()
        self.note("connecting: %s (%s)" % (self.hub.log.mask(self.spec.url), self.spec.transport))
        channel = self.protocol = _HttpChannel(self)
        try:
            await asyncio.wait_for(channel.open(), self.spec.startup_timeout)
        except (asyncio.TimeoutError, OSError, ValueError) as exc:
            channel.close()
            self.protocol = None
            raise self._failed("cannot connect to %s: %s" % (self.hub.log.mask(self.spec.url), exc or "timed out"))
        await self._shake_hands(started)

    async def _shake_hands(self, started):
        spec = self.spec
        try:
            await asyncio.wait_for(self._handshake(), spec.startup_timeout)
        except asyncio.TimeoutError:
            error = self._failed("it did not answer initialize and tools/list within %g s%s"
                                 % (spec.startup_timeout, self._stderr_tail()))
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
        self.note("running: %s %s, protocol %s, %d tools, started in %.0f ms" % (
            self.server_info.get("name", "?"), self.server_info.get("version", ""), self.protocol_version,
            len(self.listing["tools"]), (time.monotonic() - started) * 1000))
        if spec.health_interval:
            self._health = asyncio.ensure_future(self._check_health())

    def _end_orphan(self, spawn):
        if not spawn.cancelled() and spawn.exception() is None:
            transport, protocol = spawn.result()
            asyncio.ensure_future(runner_end(self.hub.runner, transport, protocol.exited, 0))

    def _failed(self, reason: str) -> UpstreamError:
        self.state, self.last_error = "failed", reason
        self.failures += 1
        self.failed_at = time.monotonic()
        self.note("failed to start: %s" % reason)
        self.log.warning("server `%s` failed to start: %s", self.spec.id, reason)
        return UpstreamError(SERVER_START_FAILED, "server `%s` failed to start: %s" % (self.spec.id, reason),
                             {"server": self.spec.id})

    def _stderr_tail(self) -> str:
        tail = [self.hub.log.mask(line) for line in self.recent if line.strip()]
        return "; its last stderr lines: %s" % " | ".join(tail)[-800:] if tail else ""

    async def _handshake(self):
        try:
            result = await self.request("initialize", {
                "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {},
                "clientInfo": {"name": "mcpstudio", "version": __version__}})
        except UpstreamError as exc:
            if exc.code in (SERVER_NOT_RUNNING, SERVER_TIMEOUT):
                raise
            await self._discover(exc)  # a server of the 2026-07-28 era only: no handshake there
            return
        self.protocol_version = result.get("protocolVersion")
        if self.protocol_version not in PROTOCOL_VERSIONS:
            self.note("it answered protocol %r, which mcpstudio does not know; going on" % self.protocol_version)
        self.capabilities = result.get("capabilities") if isinstance(result.get("capabilities"), dict) else {}
        self.server_info = result.get("serverInfo") if isinstance(result.get("serverInfo"), dict) else {}
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await self.refresh()

    async def _discover(self, refusal):
        self.modern = True
        try:
            result = await self.request("server/discover", {})
        except UpstreamError as exc:
            self.modern = False
            raise UpstreamError(exc.code, "it refused initialize (%s) and server/discover (%s)"
                                % (refusal.message, exc.message))
        if MODERN_VERSIONS[0] not in (result.get("supportedVersions") or ()):
            self.modern = False
            raise UpstreamError(INTERNAL_ERROR, "it refused initialize (%s) and supports none of %s"
                                % (refusal.message, ", ".join(MODERN_VERSIONS)))
        self.protocol_version = MODERN_VERSIONS[0]
        self.capabilities = result.get("capabilities") if isinstance(result.get("capabilities"), dict) else {}
        info = (result.get("_meta") or {}).get(META_SERVER_INFO) or result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        await self.refresh()

    async def refresh(self):
        """List what the server offers, keep it, cache it, and tell the hub when it changed."""
        before = self.known()
        listing = {}
        for capability, method, key in (("tools", "tools/list", "tools"),
                                        ("resources", "resources/list", "resources"),
                                        ("resources", "resources/templates/list", "resourceTemplates"),
                                        ("prompts", "prompts/list", "prompts")):
            listing[key] = []
            if capability in self.capabilities:
                try:
                    listing[key] = await self._list_all(method, key)
                except UpstreamError as exc:
                    if key == "tools" and exc.code != METHOD_NOT_FOUND:
                        raise
                    self.note("%s failed: %s" % (method, exc.message))  # the rest still works
        listing["serverInfo"] = self.server_info
        self.listing = listing
        self._save_cache()
        if before is None or any(before.get(k) != listing[k] for k in ("tools", "resources", "resourceTemplates", "prompts")):
            self.hub.changed()

    async def _list_all(self, method: str, key: str) -> list:
        items, cursor = [], None
        for _ in range(1000):
            result = await self.request(method, {"cursor": cursor} if cursor else {}, self.spec.startup_timeout)
            page = result.get(key)
            if not isinstance(page, list):
                raise UpstreamError(INTERNAL_ERROR, "server `%s`: its %s answer has no `%s` list" % (self.spec.id, method, key))
            items.extend(item for item in page if isinstance(item, dict) and isinstance(item.get("name", item.get("uri")), str))
            cursor = result.get("nextCursor")
            if not cursor:
                break
        return items

    async def _check_health(self):
        """Ping an idle running server now and then; one that does not answer is restarted."""
        try:
            while self.state == "running":
                await asyncio.sleep(self.spec.health_interval)
                if self.state != "running" or self.pending:
                    continue
                try:
                    await self.request("server/discover" if self.modern else "ping", {},
                                       timeout=min(HEALTH_TIMEOUT, self.spec.health_interval))
                except UpstreamError as exc:
                    if exc.code == SERVER_TIMEOUT:
                        self.log.warning("server `%s` did not answer a ping; restarting it", self.spec.id)
                        self.note("no answer to ping within %g s: restarting" % min(HEALTH_TIMEOUT, self.spec.health_interval))
                        self._health = None
                        await self.stop("it stopped answering pings", final_state="crashed")
                        self.failures += 1
                        self.failed_at = time.monotonic()
                        self.start(wait_backoff=False)
                        return
        except asyncio.CancelledError:
            pass

    def gone(self, protocol):
        """The process exited: fail what waits on it at once; the next call restarts it."""
        code = protocol.transport.get_returncode() if protocol.transport is not None else None
        reason = "exited with code %s" % code if code is None or code >= 0 else "was killed by %s" % _signal_name(-code)
        self.lost(protocol, reason + self._stderr_tail())

    def lost(self, protocol, reason: str):
        """The process exited or the connection failed: fail every waiting request at once."""
        if protocol.reason is not None:
            return
        protocol.reason = reason
        if protocol is not self.protocol:
            return
        after = "; it restarts on the next call" if self.state == "running" else ""
        for future in self.pending.values():
            if not future.done():
                future.set_exception(UpstreamError(SERVER_NOT_RUNNING, "server `%s` %s%s"
                                                   % (self.spec.id, reason, after), {"server": self.spec.id}))
        self.pending.clear()
        if self.state == "running":
            self.state, self.last_error = "crashed", reason
            uptime = time.time() - (self.started_at or time.time())
            self.failures = 1 if uptime > 60 else self.failures + 1
            self.failed_at = time.monotonic()
            self.note("crashed: %s" % reason)
            self.log.warning("server `%s` %s; it %s on the next call", self.spec.id, reason,
                             "restarts" if self.spec.url is None else "reconnects")
            asyncio.ensure_future(self._end())  # what it started goes with it

    async def _end(self):
        """Stop the process and its group (stdin closed, SIGTERM, grace, SIGKILL)."""
        if self._health is not None:
            self._health.cancel()
            self._health = None
        transport, protocol = self.transport, self.protocol
        if isinstance(protocol, _HttpChannel):
            protocol.close()
            if self.protocol is protocol:
                self.protocol = None
            return
        if transport is None:
            return
        await runner_end(self.hub.runner, transport, protocol.exited, STDIN_CLOSE_WAIT)
        if self.transport is transport:
            self.transport = self.protocol = self.pid = None

    async def stop(self, reason: str, final_state: str = "stopped"):
        """Stop the server and its group; runs to the end even if the caller is cancelled."""
        if self._stopping is None or self._stopping.done():
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

    async def _stop(self, reason: str, final_state: str):
        was = self.state
        if self.usable():
            self.state = "stopping"
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            await asyncio.wait([self._starting])
        if self.usable():
            self.state = final_state
        for future in self.pending.values():
            if not future.done():
                future.set_exception(UpstreamError(SERVER_NOT_RUNNING, "server `%s` was stopped (%s)"
                                                   % (self.spec.id, reason), {"server": self.spec.id}))
        self.pending.clear()
        if self.transport is not None:
            self.note("stopping (%s)" % reason)
            await self._end()
            self.note("stopped")
        self.started_at = None
        return was

    # -- messages -------------------------------------------------------------------

    def send(self, message: dict):
        if isinstance(self.protocol, _HttpChannel):
            self.protocol.send(message)
            return
        transport = self.transport
        pipe = transport.get_pipe_transport(0) if transport is not None else None
        if pipe is not None and not pipe.is_closing():
            pipe.write(encode_message(message))

    def request(self, method: str, params: dict, timeout=None):
        """Send a request; the returned future resolves to its result or raises UpstreamError."""
        loop = asyncio.get_running_loop()
        self.next_id += 1
        request_id = self.next_id
        future = loop.create_future()
        protocol = self.protocol
        if protocol is None or protocol.reason is not None:  # it ended before we asked
            future.set_exception(UpstreamError(SERVER_NOT_RUNNING, "server `%s` %s" % (
                self.spec.id, protocol.reason if protocol is not None else "is not running"), {"server": self.spec.id}))
        else:
            if self.modern:  # 2026-07-28: every request says its version and capabilities
                params = dict(params, _meta=dict(params.get("_meta") or (), **{
                    META_VERSION: MODERN_VERSIONS[0], META_CAPABILITIES: {},
                    "io.modelcontextprotocol/clientInfo": {"name": "mcpstudio", "version": __version__}}))
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
            if isinstance(self.protocol, _HttpChannel):
                self.protocol.abort(request_id)  # 2026-07-28 over HTTP: closing the stream cancels
            if request_id in self.pending and method != "initialize":  # the spec: initialize is never cancelled
                self.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": request_id, "reason": "cancelled by the client"}})
            raise
        finally:
            if timer is not None:
                timer.cancel()
            self.pending.pop(request_id, None)

    def _time_out(self, request_id, future, method, timeout):
        if not future.done():
            if isinstance(self.protocol, _HttpChannel):
                self.protocol.abort(request_id)  # its connection only, never the server's others
            if method != "initialize":
                self.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": request_id, "reason": "timed out after %g s" % timeout}})
            future.set_exception(UpstreamError(SERVER_TIMEOUT, "server `%s` did not answer %s within %g s"
                                               % (self.spec.id, method, timeout), {"server": self.spec.id}))

    def received(self, line: bytes):
        try:
            message = json.loads(line)
        except ValueError:
            text = line.decode("utf-8", "replace")
            self.note("skipped a line on stdout that is not JSON-RPC: %s" % _clip(text, 200))
            return
        if not isinstance(message, dict):
            self.note("skipped a message that is not an object: %s" % _clip(line.decode("utf-8", "replace"), 200))
            return
        self.received_message(message)

    def received_message(self, message: dict):
        method = message.get("method")
        if method is None:
            future = self.pending.get(message.get("id"))
            if future is not None and not future.done():
                if "error" in message:
                    error = message["error"] if isinstance(message["error"], dict) else {}
                    future.set_exception(UpstreamError(
                        error.get("code") if isinstance(error.get("code"), int) else INTERNAL_ERROR,
                        "[%s] %s" % (self.spec.id, error.get("message", "error")), error.get("data")))
                else:
                    result = message.get("result")
                    future.set_result(result if isinstance(result, dict) else {})
            return
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if "id" in message:  # a request to us: we offer no client features
            reply = {"jsonrpc": "2.0", "id": message["id"]}
            if method == "ping":
                reply["result"] = {}
            else:
                reply["error"] = {"code": METHOD_NOT_FOUND, "message": "mcpstudio does not offer %s" % method}
            self.send(reply)
        elif method == "notifications/progress":
            ctx = self.progress.get(params.get("progressToken"))
            if ctx is not None and isinstance(params.get("progress"), (int, float)):
                ctx.progress(params["progress"], params.get("total"), params.get("message"))
        elif method == "notifications/message":
            level = params.get("level") if params.get("level") in LOG_LEVELS else "info"
            self.hub.forward_log(level, params.get("data"), self.spec.id)  # the server id as logger
        elif method.endswith("/list_changed") and self.state == "running":
            asyncio.ensure_future(self._refresh_quietly())

    async def _refresh_quietly(self):
        try:
            await self.refresh()
        except UpstreamError as exc:
            self.note("could not list again after list_changed: %s" % exc.message)

    # -- forwarding -----------------------------------------------------------------

    async def forward(self, method: str, params: dict, ctx):
        """Send one routed request once the server runs; with the client's progress mapped back."""
        await self.ready(ctx)
        if self.spec.max_concurrency:
            if self._gate is None:
                self._gate = asyncio.Semaphore(self.spec.max_concurrency)
            async with self._gate:
                return await self._forward(method, params, ctx)
        return await self._forward(method, params, ctx)

    async def _forward(self, method, params, ctx):
        if self.state != "running":  # it stopped while the call waited in the queue
            await self.ready(ctx)
        token = None
        if ctx is not None and ctx.progress_token is not None:
            self.next_id += 1
            token = "mcpstudio-%d" % self.next_id
            meta = dict(params.get("_meta") or {}, progressToken=token)
            params = dict(params, _meta=meta)
            self.progress[token] = ctx
        try:
            return await self.request(method, params, self.spec.tool_timeout)
        finally:
            if token is not None:
                self.progress.pop(token, None)

    def status(self) -> dict:
        known = self.known()
        return {
            "id": self.spec.id, "name": self.spec.key, "status": self.state, "pid": self.pid,
            "uptimeSeconds": round(time.time() - self.started_at, 1) if self.started_at and self.state == "running" else None,
            "tools": len(known["tools"]) if known else None,
            "toolsFrom": ("server" if self.listing is not None else "cache") if known else None,
            "lastError": self.hub.log.mask(self.last_error) if self.last_error else None, "restarts": self.restarts,
            "command": self.hub.log.mask(self.spec.display()),
            "env": {key: "***" for key in self.spec.env},
            "headers": {key: "***" for key in self.spec.headers},
            "transport": "stdio" if self.spec.url is None else self.spec.transport,
            "protocol": self.protocol_version if self.state == "running" else None,
        }


MANAGER_TOOLS = (
    ("servers_list", "List the configured MCP servers: id, status, pid, uptime, tool count and last error.",
     {}, (), True),
    ("servers_start", "Start a server (also one stopped with servers_stop).", {"server_id": {"type": "string"}},
     ("server_id",), False),
    ("servers_stop", "Stop a server; it stays stopped (its calls fail) until servers_start.",
     {"server_id": {"type": "string"}}, ("server_id",), False),
    ("servers_restart", "Stop and start a server.", {"server_id": {"type": "string"}}, ("server_id",), False),
    ("server_logs", "Recent lines of a server's stderr and of its starts, stops and crashes.",
     {"server_id": {"type": "string"},
      "lines": {"type": "integer", "description": "how many of the last lines (default 50)", "default": 50}},
     ("server_id",), True),
    ("config_reload", "Read the config file again: added, removed and changed servers are started or "
                      "stopped, the others keep running.", {}, (), False),
    ("namespaces_list", "List the namespaces of the config and which one this process serves, and why.",
     {}, (), True),
)


class Aggregator:
    """The config's own sources plus upstream servers, as one source (see the section comment)."""

    dynamic = True
    resources = True
    prompts = True

    def __init__(self, local, plan: UpstreamPlan, runner: ProcessRunner, log: Log, *, namespace=None,
                 separator="__", manager_tools=True, eager=False, reload=None, config_path=None,
                 watch_interval=RESCAN_INTERVAL, cache_dir=None, local_key=None):
        self.runner, self.log = runner, log
        self.separator = separator
        self.manager_tools = manager_tools
        self.eager = eager
        self.requested = namespace
        self.reload_config = reload
        self.config_path = config_path
        self.watch_interval = watch_interval
        self.cache_dir = cache_dir or user_cache_dir()
        self.events = None
        self.local = list(local)
        self.local_key = local_key  # the config's own part, to tell whether a reload changed it
        self.upstreams = {}     # id -> Upstream, of the active namespace, in config order
        self.refusal = None
        self.namespace = self.chosen_by = None
        self.plan = None
        self._tools = {}        # listed name -> ("local", source, name) / ("upstream", Upstream, name) / ("manager", name)
        self._uris = {}         # resource uri -> Upstream
        self._prompt_routes = {}
        self._listing = None    # the task starting servers that have nothing to list yet
        self._watcher = None
        self._reloading = None
        self._stamp = self._config_stamp()
        self._specs = self._apply_plan(plan)

    def manager_name(self, tool: str) -> str:
        return MANAGER_PREFIX + self.separator + tool

    def _apply_plan(self, plan: UpstreamPlan):
        self.plan = plan
        self.namespace, self.chosen_by, error = select_namespace(plan.namespaces, self.requested, plan.default,
                                                                  plan.default_key)
        if error:
            self.refusal = McpError(INVALID_PARAMS, "mcpstudio cannot serve this config: %s" % error,
                                    {"namespaces": sorted(plan.namespaces), "config": self.config_path})
            self.log.error("%s: %s", self.config_path, error)
            return {}
        self.refusal = None
        members = plan.namespaces[self.namespace]["servers"] if self.namespace else None
        chosen = [spec for spec in plan.specs if members is None or spec.id in members]
        self.log.info("%s: namespace %s (%s); servers: %s", os.path.basename(self.config_path or "config"),
                      self.namespace or "(all)", self.chosen_by, ", ".join(spec.id for spec in chosen) or "none")
        for spec in chosen:
            self.log.add_secrets(spec.secrets)
            if spec.error:
                self.log.warning("%s: server `%s` is not usable: %s", self.config_path, spec.id, spec.error)
        return {spec.id: spec for spec in chosen}

    # -- the source contract ---------------------------------------------------------

    def start(self):
        for source in self.local:
            source.events = self.events
            source.start()
        self.upstreams = {sid: Upstream(spec, self) for sid, spec in self._specs.items()}
        if self.watch_interval and self.config_path:
            self._watcher = asyncio.ensure_future(self._watch())

    def session_started(self):
        for upstream in self.upstreams.values():
            if (upstream.spec.eager or self.eager) and upstream.usable() and upstream.state == "stopped":
                asyncio.get_running_loop().call_soon(upstream.start)

    def changed(self):
        if self.events is not None:
            self.events.source_changed(self)

    def forward_log(self, level, data, logger):
        if self.events is not None:
            self.events.source_log(level, data, logger)

    def reload_signal(self):
        self.log.info("SIGHUP: reading %s again", self.config_path)
        asyncio.ensure_future(self._reload_logged())

    async def _reload_logged(self):
        try:
            await self.reload()
        except ConfigError as exc:
            self.log.error("%s; the previous configuration stays in use", exc)

    def _active(self):
        return [u for u in self.upstreams.values() if u.usable()]

    async def _discover(self):
        """Start (a few at a time) the servers with nothing cached, and wait a little for each."""
        missing = [u for u in self._active() if u.known() is None and not u.user_stopped
                   and u.state not in ("starting", "stopping") and not u.backoff()]
        if not missing:
            return
        if self._listing is None or self._listing.done():
            self._listing = asyncio.ensure_future(self._start_some(missing))
        await asyncio.shield(self._listing)

    async def _start_some(self, upstreams):
        gate = asyncio.Semaphore(LIST_PARALLEL)

        async def one(upstream):
            async with gate:
                task = upstream.start()
                await asyncio.wait([task], timeout=min(LIST_WAIT, upstream.spec.startup_timeout))
                if not task.done():
                    self.log.warning("server `%s` is still starting after %g s; tools/list goes on without it "
                                     "(its tools follow with list_changed)", upstream.spec.id, LIST_WAIT)
        await asyncio.gather(*(one(u) for u in upstreams))

    def _described(self, upstream, item: dict, name: str) -> dict:
        """An upstream's tool or prompt under its public name, described as `[server] ...`."""
        described = "[%s] %s" % (upstream.spec.key, item.get("description") or "")
        return dict(item, name=name, description=described.rstrip())

    async def list_tools(self) -> list:
        await self._discover()
        tools, table = [], {}
        for source in self.local:
            for tool in await source.list_tools():
                table[tool["name"]] = ("local", source, tool["name"])
                tools.append(tool)
        namespace = self.plan.namespaces.get(self.namespace) if self.namespace else None
        for upstream in self._active():
            known = upstream.known()
            for tool in (known or {}).get("tools", ()):
                original = tool["name"]
                name = upstream.spec.id + self.separator + original
                if not _passes(original, upstream.spec.allow, upstream.spec.deny) or (
                        namespace and not _passes(name, namespace["allow"], namespace["deny"])):
                    continue
                if name in table:
                    name = safe_name(name, 10 ** 6, table)  # distinct, whatever the other one is
                table[name] = ("upstream", upstream.spec.id, original)
                tools.append(self._described(upstream, tool, name))
        if self.manager_tools:
            for tool, description, properties, required, read_only in MANAGER_TOOLS:
                name = self.manager_name(tool)
                table[name] = ("manager", tool)
                schema = {"type": "object", "properties": properties}
                if required:
                    schema["required"] = list(required)
                tools.append({"name": name, "description": "[mcpstudio] " + description, "inputSchema": schema,
                              "annotations": {"readOnlyHint": read_only}})
        self._tools = table
        return tools

    async def call_tool(self, name: str, arguments: dict, ctx) -> dict:
        route = self._tools.get(name)
        if route is None:
            raise McpError(INVALID_PARAMS, "Unknown tool: %s" % name)
        if route[0] == "local":
            return await route[1].call_tool(route[2], arguments, ctx)
        if route[0] == "manager":
            return await self._manage(route[1], arguments)
        original = route[2]
        try:
            upstream = self._upstream(route[1])
            return await upstream.forward("tools/call", {"name": original, "arguments": arguments}, ctx)
        except UpstreamError as exc:
            if exc.code in (SERVER_START_FAILED, SERVER_NOT_RUNNING, SERVER_TIMEOUT, SERVER_NOT_FOUND):
                return tool_error(exc.message)
            raise

    def _upstream(self, server_id: str) -> Upstream:
        """The server routes name by id: a reload may have replaced or removed it since the listing."""
        upstream = self.upstreams.get(server_id)
        if upstream is None:
            raise UpstreamError(SERVER_NOT_FOUND, "server `%s` is no longer configured (the config was reloaded); "
                                "list the tools again" % server_id, {"server": server_id})
        return upstream

    async def list_resources(self) -> list:
        return await self._listing_of("resources", "uri", self._uris, "list_resources")

    async def list_resource_templates(self) -> list:
        return await self._listing_of("resourceTemplates", None, None, "list_resource_templates")

    async def _listing_of(self, key, route_key, table, local_method):
        await self._discover()
        listing, routes = [], {}
        for source in self.local:
            if source.resources:
                listing.extend(await getattr(source, local_method)())
        for upstream in self._active():
            for item in ((upstream.known() or {}).get(key) or ()):
                if route_key is not None:
                    if item.get(route_key) in routes:
                        continue  # the first server to list a URI owns it
                    routes[item[route_key]] = upstream.spec.id
                listing.append(item)
        if table is not None:
            table.clear()
            table.update(routes)
        return listing

    async def read_resource(self, uri: str, ctx):
        for source in self.local:
            if source.resources:
                result = await source.read_resource(uri, ctx)
                if result is not None:
                    return result
        if uri not in self._uris:
            await self.list_resources()
        upstream = self._upstream(self._uris[uri]) if uri in self._uris else None
        if upstream is None:  # a URI no listing named: the server with a matching template
            for candidate in self._active():
                for template in ((candidate.known() or {}).get("resourceTemplates") or ()):
                    pattern = _uri_pattern(template.get("uriTemplate", "").replace("{+", "{").replace("{/", "/{"))[0]
                    if pattern is not None and pattern.fullmatch(uri):
                        upstream = candidate
                        break
                if upstream is not None:
                    break
        if upstream is None:
            return None
        return await upstream.forward("resources/read", {"uri": uri}, ctx)

    async def list_prompts(self) -> list:
        await self._discover()
        listing, table = [], {}
        for upstream in self._active():
            for prompt in ((upstream.known() or {}).get("prompts") or ()):
                name = upstream.spec.id + self.separator + prompt["name"]
                if name in table:
                    name = safe_name(name, 10 ** 6, table)
                table[name] = (upstream.spec.id, prompt["name"])
                listing.append(self._described(upstream, prompt, name))
        self._prompt_routes = table
        return listing

    async def get_prompt(self, name: str, arguments: dict, ctx):
        route = self._prompt_routes.get(name)
        if route is None:
            raise McpError(INVALID_PARAMS, "Unknown prompt: %s" % name)
        return await self._upstream(route[0]).forward("prompts/get", {"name": route[1], "arguments": arguments}, ctx)

    async def close(self):
        if self._watcher is not None:
            self._watcher.cancel()
        await asyncio.gather(*(u.stop("mcpstudio is exiting") for u in self.upstreams.values()),
                             return_exceptions=True)
        for source in self.local:
            await source.close()

    # -- manager tools -----------------------------------------------------------------

    def _server(self, arguments) -> Upstream:
        server_id = arguments.get("server_id")
        upstream = self.upstreams.get(server_id) if isinstance(server_id, str) else None
        if upstream is None and isinstance(server_id, str):  # the config key works too
            upstream = next((u for u in self.upstreams.values() if u.spec.key == server_id), None)
        if upstream is None:
            raise UpstreamError(SERVER_NOT_FOUND, "no server %s%s; servers: %s" % (
                json.dumps(server_id), " in namespace %s" % self.namespace if self.namespace else "",
                ", ".join(self.upstreams) or "none"))
        return upstream

    async def _manage(self, tool: str, arguments: dict) -> dict:
        try:
            if tool == "servers_list":
                result = {"servers": [u.status() for u in self.upstreams.values()]}
            elif tool == "namespaces_list":
                result = {"active": self.namespace, "chosenBy": self.chosen_by, "namespaces": [
                    {"name": name, "servers": ns["servers"], "active": name == self.namespace,
                     "description": ns["description"]} for name, ns in self.plan.namespaces.items()]}
            elif tool == "config_reload":
                result = await self.reload()
            elif tool == "server_logs":
                upstream = self._server(arguments)
                count = arguments.get("lines", 50)
                if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                    return tool_error("`lines` must be a positive whole number")
                lines = [self.log.mask(line) for line in list(upstream.lines)[-count:]]
                result = {"server": upstream.spec.id, "lines": lines}
            else:
                upstream = self._server(arguments)
                if tool == "servers_stop":
                    upstream.user_stopped = True  # from now: calls arriving while it stops are refused
                    await upstream.stop("servers_stop was called", "stopped-by-user")
                elif tool == "servers_restart":
                    await upstream.stop("servers_restart was called")
                    upstream.restarts += 1
                if tool in ("servers_start", "servers_restart"):
                    upstream.user_stopped = False
                    if upstream.state == "stopped-by-user":
                        upstream.state = "stopped"
                    await upstream.ready(wait_backoff=False)  # a person asked: no backoff; says why it fails
                result = upstream.status()
        except (UpstreamError, ConfigError) as exc:
            return tool_error(exc.message if isinstance(exc, McpError) else str(exc))
        return {"content": [{"type": "text", "text": json.dumps(result, indent=1, ensure_ascii=False)}],
                "structuredContent": result}

    # -- reload ---------------------------------------------------------------------------

    def _config_stamp(self):
        try:
            st = os.stat(self.config_path)
            return (st.st_mtime_ns, st.st_size, st.st_ino)
        except (OSError, TypeError):
            return None

    async def _watch(self):
        while True:
            await asyncio.sleep(self.watch_interval)
            stamp = self._config_stamp()
            if stamp is not None and stamp != self._stamp:
                self._stamp = stamp
                self.log.info("%s changed: reading it again", self.config_path)
                await self._reload_logged()

    async def reload(self) -> dict:
        """Read the config again; restart only what changed. A bad file changes nothing."""
        if self.reload_config is None:
            raise ConfigError("this server was not started from a config file")
        while self._reloading is not None and not self._reloading.done():
            await asyncio.wait([self._reloading])
        self._reloading = asyncio.ensure_future(self._reload())
        return await asyncio.shield(self._reloading)

    async def _reload(self) -> dict:
        self._stamp = self._config_stamp()
        local, plan, local_key = self.reload_config()
        error = select_namespace(plan.namespaces, self.requested, plan.default, plan.default_key)[2]
        if error and self.refusal is None:
            raise ConfigError("%s: %s; the configuration in use stays as it was" % (self.config_path, error))
        report = {"added": [], "removed": [], "restarted": [], "updated": [], "unchanged": []}
        if local_key != self.local_key:
            for source in self.local:
                await source.close()
            self.local, self.local_key = list(local), local_key
            for source in self.local:
                source.events = self.events
                source.start()
            report["localToolsReloaded"] = True
        specs = self._apply_plan(plan)
        old = self.upstreams
        new = {}
        for sid, spec in specs.items():
            upstream = old.get(sid)
            if upstream is None:
                new[sid] = Upstream(spec, self)
                report["added"].append(sid)
            elif upstream.spec.launch != spec.launch or upstream.spec.error != spec.error \
                    or upstream.spec.disabled != spec.disabled:
                running = upstream.state == "running"
                await upstream.stop("its configuration changed")
                new[sid] = Upstream(spec, self)
                new[sid].user_stopped = upstream.user_stopped  # servers_stop holds across reloads
                if upstream.user_stopped and new[sid].usable():
                    new[sid].state = "stopped-by-user"
                if running and new[sid].usable() and not upstream.user_stopped:
                    new[sid].start(wait_backoff=False)
                report["restarted"].append(sid)
            else:
                if upstream.spec.settings != spec.settings:
                    report["updated"].append(sid)
                if upstream.spec.max_concurrency != spec.max_concurrency:
                    upstream._gate = None  # calls from now on queue by the new limit
                upstream.spec = spec
                new[sid] = upstream
                if sid not in report["updated"]:
                    report["unchanged"].append(sid)
        for sid, upstream in old.items():
            if sid not in new:
                await upstream.stop("it was removed from the config")
                report["removed"].append(sid)
        self.upstreams = new
        report["namespace"] = self.namespace
        if self.refusal is not None:
            report["error"] = self.refusal.message
        self.log.debug("config reloaded: %s", json.dumps(report))
        self.changed()
        return report


def aggregator_for(local, info, load, path, runner, log, options, script_options) -> Aggregator:
    """The Aggregator of a config with MCP servers; `load()` reads the file again (reloads)."""
    def reload():
        _, found, again = load()
        return found, again["upstream"] or UpstreamPlan([], {}, None, "defaultNamespace"), again["local_key"]
    return Aggregator(
        local, info["upstream"], runner, log, namespace=options["namespace"], separator=info["separator"],
        manager_tools=not options["no_manager_tools"], eager=bool(options["eager"]), reload=reload,
        config_path=path, local_key=info["local_key"], watch_interval=script_options.get("rescan", RESCAN_INTERVAL))


async def check_upstreams(specs, runner, log, cache_dir=None) -> list:
    """`status --check`: start each server, list it, stop it; (spec, seconds, tools, error) each."""
    hub = Aggregator([], UpstreamPlan(specs, {}, None, "defaultNamespace"), runner, log, watch_interval=0,
                     cache_dir=cache_dir)
    hub.start()
    gate = asyncio.Semaphore(LIST_PARALLEL)

    async def one(upstream):
        async with gate:
            if not upstream.usable():
                return upstream.spec, None, None, upstream.spec.error or "disabled"
            started = time.monotonic()
            try:
                await upstream.ready()
                return upstream.spec, time.monotonic() - started, len(upstream.listing["tools"]), None
            except UpstreamError as exc:
                return upstream.spec, None, None, exc.message
            finally:
                await upstream.stop("status --check is done")
    try:
        return await asyncio.gather(*(one(u) for u in hub.upstreams.values()))
    finally:
        await hub.close()


def status_command(path: str, log: Log, options: dict) -> int:
    """`status [--config FILE] [--namespace NAME] [--check]`."""
    loader = ConfigLoader(path)
    _, info = loader.load(ProcessRunner(log), log, RunSettings())
    log.add_secrets(loader.secrets)
    plan = info["upstream"] or UpstreamPlan([], {}, None, "defaultNamespace")
    for spec in plan.specs:
        log.add_secrets(spec.secrets)
    checks = None
    if options["check"]:
        namespace, _, error = select_namespace(plan.namespaces, options["namespace"], plan.default, plan.default_key)
        members = plan.namespaces[namespace]["servers"] if namespace and not error else None
        specs = [spec for spec in plan.specs if members is None or spec.id in members]
        runner = ProcessRunner(log)

        async def check():
            try:
                return await check_upstreams(specs, runner, log)
            finally:
                await runner.stop_all()
                runner.close_watchdog()
        checks = asyncio.run(check())
    return print_status(loader.path, plan, options["namespace"], checks, log=log)


def print_status(path: str, plan: UpstreamPlan, requested, checks=None, cache_dir=None, log=None):
    """The table of `status`: servers, cached tool counts (or --check results), namespaces."""
    cache_dir = cache_dir or user_cache_dir()
    namespace, how, error = select_namespace(plan.namespaces, requested, plan.default, plan.default_key)
    print("config: %s" % path)
    print("namespace: %s" % ("error: %s" % error if error else "%s (%s)" % (namespace or "(all servers)", how)))
    rows = [("SERVER", "TOOLS" if checks is None else "CHECK", "COMMAND")]
    results = {spec.id: (seconds, tools, problem) for spec, seconds, tools, problem in (checks or ())}
    for spec in plan.specs:
        if spec.disabled:
            state = "disabled"
        elif spec.error:
            state = "error: %s" % spec.error
        elif checks is not None:
            seconds, tools, problem = results.get(spec.id, (None, None, "not in the active namespace"))
            state = "failed: %s" % problem if problem else "ok, %d tools, started in %.0f ms" % (tools, seconds * 1000)
        else:
            try:
                with open(os.path.join(cache_dir, "server-%s.json" % spec.launch), encoding="utf-8") as f:
                    entry = json.load(f)
                state = "%d (cached %s)" % (len(entry["tools"]), time.strftime("%Y-%m-%d %H:%M", time.localtime(entry["saved"])))
            except (OSError, ValueError, KeyError, TypeError):
                state = "- (not cached yet)"
        command = spec.display() if not spec.error else ""
        rows.append((spec.id, state, log.mask(command) if log else command))
    if len(rows) == 1:
        print("\nno servers configured")
    else:
        width = [max(len(row[i]) for row in rows) for i in range(2)]
        print()
        for row in rows:
            print(("%-*s  %-*s  %s" % (width[0], row[0], width[1], row[1], row[2])).rstrip())
    if plan.namespaces:
        print("\nnamespaces:")
        for name, ns in plan.namespaces.items():
            mark = "*" if name == namespace else " "
            print(" %s %-16s %s" % (mark, name, ", ".join(ns["servers"]) or "(no servers)"))
    if error:
        return 1
    failed = [r for r in (checks or ()) if r[3]]
    return 1 if failed or any(s.error for s in plan.specs) else 0
''')


# --------------------------------------------------------------------------
# Streamable HTTP: the same Server at one endpoint, /mcp
# --------------------------------------------------------------------------
# Both eras on one endpoint. A 2026-07-28 request (its `_meta` names the
# version) is served statelessly by a Session of its own, with its headers
# checked against its body; the handshake era gets a session per
# `initialize` (`Mcp-Session-Id`), a GET stream for list changes, and DELETE.
# Replies are JSON, or an SSE stream when the client accepts one and the
# request may send progress or log lines first. Safe by default: loopback
# only unless a bearer token is set, Host and Origin checked (DNS
# rebinding), header and body sizes bounded, slow clients timed out.
# Compiled on first use (see "Sections compiled on first use" at the top).
_section('http', source=r'''
import base64
import collections
import hmac
import ipaddress
import secrets as _secrets

HTTP_PATH = "/mcp"
HTTP_MAX_HEADER = 16 << 10        # bytes of request line and headers together
HTTP_MAX_BODY = 4 << 20           # bytes of one request body
HTTP_HEADER_TIMEOUT = 30.0        # seconds a client may take to send its headers, its body, or to read
HTTP_IDLE_CONNECTION = 120.0      # seconds a keep-alive connection may wait for its next request
HTTP_MAX_CONNECTIONS = 512
HTTP_IDLE_SESSION = 3600.0        # seconds an unused handshake-era session is kept
HTTP_MAX_SESSIONS = 1000
HTTP_TOKEN_VARIABLE = "MCPSTUDIO_HTTP_TOKEN"
_STATUS = {200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 501: "Not Implemented",
           404: "Not Found", 405: "Method Not Allowed", 406: "Not Acceptable", 408: "Request Timeout",
           413: "Payload Too Large", 415: "Unsupported Media Type", 431: "Request Header Fields Too Large",
           500: "Internal Server Error", 503: "Service Unavailable"}
_STREAMED = ("tools/call", "resources/read", "prompts/get", "subscriptions/listen")


class HttpError(Exception):
    def __init__(self, status: int, message: str, code=None, request_id=None, headers=(), data=None):
        super().__init__(message)
        self.status, self.code, self.request_id, self.headers = status, code, request_id, list(headers)
        self.data = data


class _Exchange:
    """Where one request's messages go: its response, and the notifications that belong to it."""

    def __init__(self, streaming: bool):
        self.streaming = streaming
        self.queue = asyncio.Queue()

    def put(self, message, final: bool):
        self.queue.put_nowait((message, final))


class _HttpTransport:
    """A Session's transport over HTTP: responses and related notifications to their exchange;
    everything else to the session's GET stream, if one is open."""

    def ended(self, request_id):
        """The request was cancelled: its exchange ends without a response."""
        exchange = self.exchanges.pop(request_id, None)
        if exchange is not None:
            exchange.put(None, True)

    framing = NEWLINE

    def __init__(self, log):
        self.log = log
        self.exchanges = {}      # request id -> _Exchange
        self.stream = None       # the GET stream's queue (handshake era)

    def send(self, message, framing=None, related=None):
        if self.log.file is not None:
            self.log.wire("<-", encode_message(message))
        if isinstance(message, dict) and "method" not in message:
            exchange = self.exchanges.pop(message.get("id"), None)
            if exchange is not None:
                exchange.put(message, True)
            return
        exchange = self.exchanges.get(related) if related is not None else None
        if exchange is not None:
            if exchange.streaming:
                exchange.put(message, False)
        elif self.stream is not None:
            self.stream.put_nowait(message)


class _HttpSession:
    def __init__(self, session_id, session, transport):
        self.id, self.session, self.transport = session_id, session, transport
        self.used = time.monotonic()


def _loopback(host: str) -> bool:
    """True only for `localhost` and loopback addresses (127.0.0.0/8, ::1); never for names."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(value: str) -> str:
    """`example.com:8080` -> example.com; `[::1]:80` -> [::1]."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[:value.find("]") + 1]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _header_value(value: str) -> str:
    """Trim; decode the =?base64?...?= form 2026-07-28 clients use for non-ASCII values."""
    value = value.strip()
    if value.startswith("=?base64?") and value.endswith("?="):
        try:
            return base64.b64decode(value[9:-2]).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return value
    return value


def _good_id(message: dict) -> bool:
    request_id = message.get("id")
    return request_id is None or (isinstance(request_id, (str, int)) and not isinstance(request_id, bool))


class HttpServer:
    """Serves a Server over Streamable HTTP at HTTP_PATH (both protocol eras)."""

    def __init__(self, server, log: Log, host: str, port: int, token=None):
        self.server, self.log, self.host, self.port, self.token = server, log, host, port, token
        self.local = _loopback(host)
        self.sessions = collections.OrderedDict()  # Mcp-Session-Id -> _HttpSession, least recently used first
        self.connections = set()
        self.listener = None
        self._sweeper = None

    async def start(self):
        self.listener = await asyncio.start_server(self._connection, self.host, self.port, limit=HTTP_MAX_HEADER)
        self.port = self.listener.sockets[0].getsockname()[1]
        self._sweeper = asyncio.ensure_future(self._sweep())

    async def _sweep(self):
        """End sessions nobody used for HTTP_IDLE_SESSION."""
        while True:
            await asyncio.sleep(min(60.0, HTTP_IDLE_SESSION))
            now = time.monotonic()
            for key, entry in list(self.sessions.items()):
                if now - entry.used > HTTP_IDLE_SESSION:
                    self._end(key)

    async def close(self):
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self.listener is not None:
            self.listener.close()
        for entry in list(self.sessions.values()):
            await entry.session.cancel_all()
        for task in list(self.connections):
            task.cancel()
        if self.connections:
            await asyncio.wait(list(self.connections), timeout=2)

    # -- connections -----------------------------------------------------------------

    async def _connection(self, reader, writer):
        task = asyncio.current_task()
        self.connections.add(task)
        try:
            if len(self.connections) > HTTP_MAX_CONNECTIONS:
                await self._reply(writer, 503, {"error": "too many connections"}, close=True)
                return
            while True:
                try:  # an idle keep-alive connection just closes; a half-sent request gets 408
                    first = await asyncio.wait_for(reader.readuntil(b"\r\n"), HTTP_IDLE_CONNECTION)
                except (asyncio.TimeoutError, asyncio.IncompleteReadError):
                    return
                except asyncio.LimitOverrunError:
                    await self._reply(writer, 431, {"error": "request line too long"}, close=True)
                    return
                try:
                    head = await asyncio.wait_for(self._read_head(reader, first), HTTP_HEADER_TIMEOUT)
                    self._check(*head)
                    body = await asyncio.wait_for(self._read_body(reader, head[3]), HTTP_HEADER_TIMEOUT)
                except asyncio.TimeoutError:
                    await self._reply(writer, 408, {"error": "the request took too long to arrive"}, close=True)
                    return
                except asyncio.IncompleteReadError:
                    return
                except asyncio.LimitOverrunError:
                    await self._reply(writer, 431, {"error": "header too long"}, close=True)
                    return
                except HttpError as exc:  # refused before its body was read: the connection closes
                    await self._reply(writer, exc.status, self._error_body(exc), exc.headers, close=True)
                    return
                method, target, version, headers = head
                keep = version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
                keep = await self._answer(method, headers, body, keep, version, reader, writer)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError,
                asyncio.TimeoutError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            self.connections.discard(task)
            try:
                writer.close()
            except OSError:
                pass

    async def _read_head(self, reader, line):
        parts = line.decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise HttpError(400, "malformed request line")
        method, target, version = parts
        headers, size = {}, len(line)
        while True:
            line = await reader.readuntil(b"\r\n")
            size += len(line)
            if size > HTTP_MAX_HEADER or len(headers) > 100:
                raise HttpError(431, "headers larger than %d bytes" % HTTP_MAX_HEADER)
            if line == b"\r\n":
                return method, target, version, headers
            name, colon, value = line.decode("latin-1").partition(":")
            if not colon:
                raise HttpError(400, "malformed header line")
            name = name.strip().lower()
            headers[name] = (headers[name] + ", " + value.strip()) if name in headers else value.strip()

    async def _read_body(self, reader, headers) -> bytes:
        coding = headers.get("transfer-encoding", "").strip().lower()
        if coding and coding != "chunked":
            raise HttpError(501, "Transfer-Encoding %s is not supported (use chunked or Content-Length)" % coding)
        if coding == "chunked":
            body = bytearray()
            while True:
                size_line = await reader.readuntil(b"\r\n")
                try:
                    length = int(size_line.split(b";")[0].strip(), 16)
                except ValueError:
                    length = -1
                if length < 0:
                    raise HttpError(400, "malformed chunk size")
                if length == 0:
                    while await reader.readuntil(b"\r\n") != b"\r\n":
                        pass
                    return bytes(body)
                if len(body) + length > HTTP_MAX_BODY:
                    raise HttpError(413, "a request body may hold at most %d bytes" % HTTP_MAX_BODY)
                body += await reader.readexactly(length)
                await reader.readexactly(2)
        if "content-length" in headers:
            try:
                length = int(headers["content-length"])
            except ValueError:
                raise HttpError(400, "malformed Content-Length")
            if length < 0 or length > HTTP_MAX_BODY:
                raise HttpError(413, "a request body may hold at most %d bytes" % HTTP_MAX_BODY)
            return await reader.readexactly(length)
        return b""

    # -- writing ------------------------------------------------------------------------

    async def _drain(self, writer):
        """Wait for the client to take what was written; one that stops reading is dropped."""
        await asyncio.wait_for(writer.drain(), HTTP_HEADER_TIMEOUT)

    async def _reply(self, writer, status, body, headers=(), close=False):
        data = b"" if body is None else json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        lines = ["HTTP/1.1 %d %s" % (status, _STATUS.get(status, "Error"))]
        if body is not None:
            lines.append("Content-Type: application/json")
        lines.append("Content-Length: %d" % len(data))
        lines.extend("%s: %s" % pair for pair in headers)
        if close:
            lines.append("Connection: close")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data)
        await self._drain(writer)

    def _error_body(self, exc: HttpError) -> dict:
        error = {"code": exc.code if exc.code is not None else INVALID_REQUEST, "message": str(exc)}
        if exc.data is not None:
            error["data"] = exc.data
        return {"jsonrpc": "2.0", "id": exc.request_id, "error": error}

    # -- checks ----------------------------------------------------------------------------

    def _check(self, method, target, version, headers):
        """Before any body is read: the endpoint, Host and Origin (DNS rebinding), the token."""
        host = _host_name(headers.get("host", ""))
        if not host:
            raise HttpError(400, "a Host header is required")
        if self.local and not _loopback(host):
            raise HttpError(403, "Host %s is not this machine (DNS rebinding protection)" % host)
        origin = headers.get("origin")
        if origin is not None:
            origin_host = _host_name(origin.split("://", 1)[-1].split("/", 1)[0]) if "://" in origin else ""
            if not origin_host or not (_loopback(origin_host) if self.local else origin_host == host):
                raise HttpError(403, "Origin %s is not allowed (DNS rebinding protection)" % origin)
        if self.token is not None:
            given = headers.get("authorization", "")
            if not (given[:7].lower() == "bearer " and hmac.compare_digest(given[7:].strip().encode(), self.token.encode())):
                raise HttpError(401, "a valid `Authorization: Bearer <token>` header is required",
                                headers=[("WWW-Authenticate", 'Bearer realm="mcpstudio"')])
        if target.split("?", 1)[0] != HTTP_PATH:
            raise HttpError(404, "the MCP endpoint is %s" % HTTP_PATH)
        if method == "POST":
            length = headers.get("content-length", "0").strip()
            if length.isdigit() and int(length) > HTTP_MAX_BODY:
                raise HttpError(413, "a request body may hold at most %d bytes" % HTTP_MAX_BODY)

    # -- requests ---------------------------------------------------------------------------

    async def _answer(self, method, headers, body, keep, version, reader, writer) -> bool:
        try:
            if method == "POST":
                return await self._post(headers, body, reader, writer, keep, version)
            if method == "GET":
                return await self._get(headers, reader, writer)
            if method == "DELETE":
                return await self._delete(headers, writer, keep)
            raise HttpError(405, "use POST (or GET and DELETE with an Mcp-Session-Id)", headers=[("Allow", "POST, GET, DELETE")])
        except HttpError as exc:
            await self._reply(writer, exc.status, self._error_body(exc), exc.headers, close=not keep)
            return keep

    def _session(self, headers, required=True):
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            if required:
                raise HttpError(400, "this request needs the Mcp-Session-Id header from initialize "
                                     "(or 2026-07-28 `_meta` on the request)")
            return None
        entry = self.sessions.get(session_id.strip())
        if entry is None:
            raise HttpError(404, "no session %s (it ended or expired); initialize again" % session_id.strip())
        entry.used = time.monotonic()
        self.sessions.move_to_end(entry.id)
        return entry

    async def _post(self, headers, body, reader, writer, keep, version) -> bool:
        if headers.get("content-type", "application/json").split(";")[0].strip().lower() != "application/json":
            raise HttpError(415, "send the JSON-RPC message as Content-Type: application/json")
        accept = headers.get("accept", "*/*").lower()
        if not any(kind in accept for kind in ("application/json", "text/event-stream", "*/*")):
            raise HttpError(406, "accept application/json or text/event-stream")
        try:
            message = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise HttpError(400, "Parse error: %s" % exc, PARSE_ERROR)
        if not isinstance(message, dict):
            raise HttpError(400, "send one JSON-RPC message per request (no batches)", INVALID_REQUEST)
        if not _good_id(message):
            raise HttpError(400, "Invalid request: `id` must be a string or an integer", INVALID_REQUEST)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        meta = params.get("_meta")
        modern = (method == "server/discover" or (isinstance(meta, dict) and META_VERSION in meta)
                  or (headers.get("mcp-protocol-version", "").strip() in MODERN_VERSIONS and "mcp-session-id" not in headers))
        sse = "text/event-stream" in accept and method in _STREAMED
        if modern:
            return await self._modern(message, method, request_id, params, meta, headers, sse, reader, writer,
                                      keep, version)
        session_version = headers.get("mcp-protocol-version")
        if session_version is not None and session_version.strip() not in PROTOCOL_VERSIONS:
            raise HttpError(400, "unsupported MCP-Protocol-Version %s (supported: %s)"
                            % (session_version.strip(), ", ".join(PROTOCOL_VERSIONS)), INVALID_REQUEST, request_id)
        if method == "initialize" and "id" in message:
            entry = self._new_session()
            extra = [("Mcp-Session-Id", entry.id)]
        else:
            entry = self._session(headers)
            extra = []
        if method is None or "id" not in message:  # a notification or a response: accepted
            entry.session.receive(body, NEWLINE)
            await self._reply(writer, 202, None, close=not keep)
            return keep
        if request_id in entry.transport.exchanges or request_id in entry.session.inflight:
            raise HttpError(400, "Invalid request: id %s is already in use by a request in progress"
                            % json.dumps(request_id), INVALID_REQUEST, request_id)
        exchange = _Exchange(sse)
        entry.transport.exchanges[request_id] = exchange
        entry.session.receive(body, NEWLINE)
        return await self._deliver(exchange, writer, reader, extra, keep, version, None)

    def _session_pair(self):
        """A Session of the Server over a transport that routes to HTTP exchanges."""
        transport = _HttpTransport(self.log)
        return Session(transport, self.server.dispatch, self.log, self.server.notification), transport

    def _new_session(self) -> _HttpSession:
        while len(self.sessions) >= HTTP_MAX_SESSIONS:  # the least recently used one makes room
            self._end(next(iter(self.sessions)))
        session, transport = self._session_pair()
        entry = _HttpSession(_secrets.token_hex(16), session, transport)
        self.sessions[entry.id] = entry
        return entry

    def _end(self, session_id):
        entry = self.sessions.pop(session_id, None)
        if entry is not None:
            self.server.forget(entry.session)
            asyncio.ensure_future(entry.session.cancel_all())
            if entry.transport.stream is not None:
                entry.transport.stream.put_nowait(None)

    async def _modern(self, message, method, request_id, params, meta, headers, sse, reader, writer, keep, version):
        def refuse(status, code, text):
            raise HttpError(status, text, code, request_id)
        if method is None or "id" not in message:
            await self._reply(writer, 202, None, close=not keep)  # no client notifications exist here
            return keep
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
        if method in ("tools/call", "prompts/get", "resources/read"):
            name = params.get("uri" if method == "resources/read" else "name")
            if _header_value(headers.get("mcp-name", "")) != name:
                refuse(400, HEADER_MISMATCH, "the Mcp-Name header must equal the request's %s (%s)"
                       % ("uri" if method == "resources/read" else "name", name))
        if method not in self.server.modern_methods:
            refuse(404, METHOD_NOT_FOUND, "Method not found: %s" % method)
        session, transport = self._session_pair()
        exchange = _Exchange(sse)
        transport.exchanges[request_id] = exchange
        session.receive(json.dumps(message).encode(), NEWLINE)
        return await self._deliver(exchange, writer, reader, [], keep, version, session)

    async def _deliver(self, exchange, writer, reader, extra, keep, version, session) -> bool:
        """Write the exchange's messages as JSON or SSE. A client that goes away cancels a
        2026-07-28 request (`session` is its own); a cancelled request's stream just ends."""
        started = finished = False
        chunked = version == "HTTP/1.1"
        try:
            while True:
                getter = asyncio.ensure_future(exchange.queue.get())
                while not getter.done():
                    await asyncio.wait([getter], timeout=0.25)
                    if not getter.done() and (reader.at_eof() or writer.transport.is_closing()):
                        getter.cancel()
                        return False
                message, final = getter.result()
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
                if not exchange.streaming:
                    if final:
                        await self._reply(writer, 200, message, extra, close=not keep)
                        finished = True
                        return keep
                    continue
                if not started:
                    head = ["HTTP/1.1 200 OK", "Content-Type: text/event-stream", "Cache-Control: no-cache",
                            "X-Accel-Buffering: no"]
                    head.append("Transfer-Encoding: chunked" if chunked else "Connection: close")
                    head.extend("%s: %s" % pair for pair in extra)
                    if chunked and not keep:
                        head.append("Connection: close")
                    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
                    started = True
                event = b"event: message\ndata: " + json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
                writer.write(b"%x\r\n%s\r\n" % (len(event), event) if chunked else event)
                if final:
                    if chunked:
                        writer.write(b"0\r\n\r\n")
                    await self._drain(writer)
                    finished = True
                    return keep and chunked
                await self._drain(writer)
        finally:
            if not finished and session is not None:  # the client left (or we stop): cancel its call
                await session.cancel_all()

    async def _get(self, headers, reader, writer) -> bool:
        if "mcp-session-id" not in headers:
            raise HttpError(405, "GET streams belong to a handshake-era session (Mcp-Session-Id); "
                                 "2026-07-28 clients use subscriptions/listen", headers=[("Allow", "POST")])
        entry = self._session(headers)
        if "text/event-stream" not in headers.get("accept", "").lower():
            raise HttpError(406, "a GET stream needs Accept: text/event-stream")
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

    async def _delete(self, headers, writer, keep) -> bool:
        if "mcp-session-id" not in headers:
            raise HttpError(405, "DELETE ends a handshake-era session (Mcp-Session-Id)", headers=[("Allow", "POST")])
        entry = self._session(headers)
        self._end(entry.id)
        await self._reply(writer, 200, None, close=not keep)
        return keep


def parse_http_address(value: str) -> tuple:
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


def run_http(server, runner: ProcessRunner, log: Log, options: dict) -> int:
    """`--http [HOST:]PORT`: check the address and the token, then serve until stopped."""
    try:
        host, port = parse_http_address(options["http"])
    except UsageError as exc:
        sys.stderr.write("mcpstudio: error: %s\n" % exc)
        return 2
    token = options["http_token"] or os.environ.get(HTTP_TOKEN_VARIABLE) or None
    if token is None and not _loopback(host):
        sys.stderr.write("mcpstudio: error: --http %s listens beyond this machine: set a bearer token with "
                         "--http-token or $%s (or bind 127.0.0.1)\n" % (options["http"], HTTP_TOKEN_VARIABLE))
        return 2
    if token:
        log.add_secrets([token])
    _claim_stdout()
    try:
        return asyncio.run(serve_http(server, runner, log, host, port, token))
    except OSError as exc:
        sys.stderr.write("mcpstudio: error: --http %s: %s\n" % (options["http"], exc))
        return 1
    except KeyboardInterrupt:
        asyncio.run(runner.stop_all())
        return 0
    finally:
        log.close()


async def serve_http(server, runner: ProcessRunner, log: Log, host: str, port: int, token=None) -> int:
    """Serve `server` at http://host:port/mcp until SIGTERM or SIGINT."""
    loop = asyncio.get_running_loop()
    http = HttpServer(server, log, host, port, token)
    await http.start()
    server.catalog.start(server)
    shown = "[%s]" % host if ":" in host else host
    log.info("serving MCP at http://%s:%d%s%s", shown, http.port, HTTP_PATH,
             " (bearer token required)" if token else "")
    stopping = loop.create_future()

    def stop(reason):
        if not stopping.done():
            stopping.set_result(reason)
            log.debug("stopping: %s", reason)
    _on_stop_signals(loop, stop, server.catalog.reload_signal())
    await stopping
    await http.close()
    await server.catalog.close()
    await runner.stop_all()
    runner.close_watchdog()
    return 0
''')


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------

class _Option:
    __slots__ = ("names", "dest", "metavar", "kind", "help")

    def __init__(self, names, dest, metavar, kind, help):
        self.names, self.dest, self.metavar, self.kind, self.help = names, dest, metavar, kind, help


def _positive(text: str, option: str, kind=float):
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not (0 < value < float("inf")):
        raise UsageError("%s needs a positive %s, not %r" % (option, "whole number" if kind is int else "number", text))
    return value


# (names, dest, metavar, kind, help): kind is "flag", "value" or "append".
OPTIONS = [_Option(*o) for o in (
    (("-h", "--help"), "help", None, "flag", "show this help and exit"),
    (("--version",), "version", None, "flag", "print the version and exit"),
    (("--name",), "name", "NAME", "value", "tool name (default: the command's base name)"),
    (("--description",), "description", "TEXT", "value", "tool description (default: the template)"),
    (("--read-only",), "read_only", None, "flag", "annotate the tool readOnlyHint: true"),
    (("--destructive",), "destructive", None, "flag", "annotate the tool destructiveHint: true"),
    (("--idempotent",), "idempotent", None, "flag", "annotate the tool idempotentHint: true"),
    (("--open-world",), "open_world", None, "flag", "annotate the tool openWorldHint: true"),
    (("--env",), "env", "KEY=VALUE", "append", "set a variable for the command (repeatable; masked in logs)"),
    (("--cwd",), "cwd", "DIR", "value", "folder the command runs in (default: the current one)"),
    (("--timeout",), "timeout", "SECONDS", "value", "stop a call after this long (default: %g)" % DEFAULT_TIMEOUT),
    (("--max-output",), "max_output", "BYTES", "value",
     "keep at most this much of stdout and of stderr (default: %d)" % DEFAULT_MAX_OUTPUT),
    (("--max-concurrency",), "max_concurrency", "N", "value",
     "commands running at once; more calls wait (default: %d)" % DEFAULT_MAX_CONCURRENCY),
    (("--max-name-length",), "max_name_length", "N", "value",
     "longest tool name given to clients (default: %d)" % DEFAULT_MAX_NAME_LENGTH),
    (("--allow-dash-values",), "allow_dash_values", None, "flag",
     "let values start an argument with '-' (off: refused as option injection)"),
    (("--config",), "config", "FILE", "value",
     "serve the tools, resources and script folders of a JSON config file (see `serve`)"),
    (("--root-directory",), "root_directory", "DIR", "value",
     "serve every executable script under DIR as a tool (script mode)"),
    (("--include",), "include", "GLOB", "append",
     "script mode: only run scripts whose path under DIR matches (repeatable)"),
    (("--exclude",), "exclude", "GLOB", "append", "script mode: skip scripts whose path matches (repeatable)"),
    (("--separator",), "separator", "SEP", "value",
     "joins folder and script names in tool names (default: __, so math/add is math__add)"),
    (("--help-timeout",), "help_timeout", "SECONDS", "value",
     "script mode: how long a script's --help or --state may take (default: %g)" % HELP_TIMEOUT),
    (("--rescan",), "rescan", "SECONDS", "value",
     "script mode: look for changed scripts this often, 0 for never (default: %g)" % RESCAN_INTERVAL),
    (("--debug",), "debug", None, "flag", "write debug lines to stderr"),
    (("--log",), "log", "FILE", "value", "append debug lines and every protocol message to FILE"),
    (("--namespace",), "namespace", "NAME", "value",
     "serve this namespace of the config's MCP servers (default: the config's defaultNamespace)"),
    (("--no-manager-tools",), "no_manager_tools", None, "flag",
     "hide the mcpstudio__servers_list, ... tools that manage the config's MCP servers"),
    (("--eager",), "eager", None, "flag", "start every configured MCP server right after initialize"),
    (("--check",), "check", None, "flag", "status: start each server, list its tools and stop it"),
    (("--stdio",), "stdio", None, "flag", "serve on stdin/stdout (the default; accepted for other tools' configs)"),
    (("--http",), "http", "[HOST:]PORT", "value",
     "serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults to 127.0.0.1)"),
    (("--http-token",), "http_token", "TOKEN", "value",
     "require Authorization: Bearer TOKEN (default: $MCPSTUDIO_HTTP_TOKEN; required off loopback)"),
)]
_OPTIONS_BY_NAME = {name: option for option in OPTIONS for name in option.names}

USAGE = ("usage: mcpstudio [OPTIONS] [--] COMMAND [TEMPLATE...]\n"
         "       mcpstudio [OPTIONS] --root-directory DIR\n"
         "       mcpstudio [OPTIONS] serve|check [--config FILE] [--namespace NAME]\n"
         "       mcpstudio status [--config FILE] [--namespace NAME] [--check]\n"
         "       mcpstudio init NAME --command CMD [--description TEXT] [-o FILE] [--force]")


def help_text() -> str:
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
        "                          write a commented starter config", "",
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
              '  mcpstudio --read-only git log [--oneline] -n "{limit}" -- "{path # file to inspect}"',
              "  mcpstudio --root-directory ./scripts",
              "", "Docs: README.md beside this file."]
    return "\n".join(lines)


def parse_command_line(argv: list, options: dict | None = None) -> tuple:
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


def _build_server(options: dict, words: list, log: Log, config: str | None = None):
    """The command line's sources (a template, a script folder, a config file) behind one Server."""
    env = None
    if options["env"]:
        env = dict(os.environ)
        for pair in options["env"]:
            key, eq, value = pair.partition("=")
            if not eq or not key:
                raise UsageError("--env needs KEY=VALUE, not %r" % pair)
            env[key] = value
    cwd = options["cwd"]
    if cwd is not None:
        cwd = os.path.abspath(os.path.expanduser(cwd))
        if not os.path.isdir(cwd):
            raise UsageError("--cwd %s: no such folder (looked for %s)" % (options["cwd"], cwd))
    cli_timeout = _positive(options["timeout"], "--timeout") if options["timeout"] else None
    settings = RunSettings(
        env=env, cwd=cwd, timeout=cli_timeout or DEFAULT_TIMEOUT,
        max_output=_positive(options["max_output"], "--max-output", int) if options["max_output"] else DEFAULT_MAX_OUTPUT,
        max_concurrency=(_positive(options["max_concurrency"], "--max-concurrency", int)
                         if options["max_concurrency"] else DEFAULT_MAX_CONCURRENCY),
        allow_dash_values=bool(options["allow_dash_values"]))
    max_name = (_positive(options["max_name_length"], "--max-name-length", int)
                if options["max_name_length"] else DEFAULT_MAX_NAME_LENGTH)
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
        script_options["help_timeout"] = _positive(options["help_timeout"], "--help-timeout")
    runner = ProcessRunner(log)
    sources, titles, instructions = [], [], None
    if config is not None:
        _need("config")

        def load():
            loader = ConfigLoader(config)
            found, info = loader.load(runner, log, settings.derive(timeout=cli_timeout), options["separator"],
                                      script_options)
            log.add_secrets(loader.secrets)
            return loader, found, info
        loader, found, info = load()
        if info["upstream"] is not None:  # MCP servers: one Aggregator over them and the file's own sources
            found = [aggregator_for(found, info, load, loader.path, runner, log, options, script_options)]
        elif options["namespace"]:
            raise UsageError("--namespace %s: %s configures no MCP servers (`mcpServers`) and no namespaces"
                             % (options["namespace"], loader.path))
        sources.extend(found)
        titles.append(info["name"] or os.path.basename(loader.path))
        instructions = info["instructions"] or info["description"]
    if words:
        template = Template(words)
        name = safe_name(options["name"] or template.command_name().replace("-", "_"), max_name)
        tool = CommandTool(name, template, runner, settings, description=options["description"],
                           annotations=annotations)
        sources.append(TemplateTools([tool]))
        titles.append(template.command_name())
    if options["root_directory"]:
        _need("scripts")
        root = os.path.expanduser(options["root_directory"])
        if not os.path.isdir(root):
            raise UsageError("--root-directory %s: no such folder (looked for %s; client configs need "
                             "absolute paths)" % (options["root_directory"], os.path.abspath(root)))
        separator = options["separator"] or "__"
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,8}", separator):
            raise UsageError("--separator %r: use 1 to 8 of the characters A-Z a-z 0-9 _ -, "
                             "which every client accepts in tool names" % separator)
        sources.append(ScriptDirectory(root, runner, settings, log, include=options["include"],
                                       exclude=options["exclude"], separator=separator, **script_options))
        titles.append(os.path.basename(os.path.realpath(root)) + "/")
    catalog = Catalog(sources, max_name)
    return Server(catalog, log, title="mcpstudio: %s" % ", ".join(titles), instructions=instructions), runner


def default_config_path() -> str:
    """$XDG_CONFIG_HOME/mcpstudio/config.json, else ~/.config/mcpstudio/config.json."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return os.path.join(base, "mcpstudio", "config.json")


def _claim_stdout() -> int:
    """Keep the protocol stream on a private descriptor and point fd 1 at stderr.

    A stray print() or a child that inherits fd 1 then writes to stderr and
    can never corrupt the protocol.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


SUBCOMMANDS = ("serve", "check", "init", "status")

def main(argv: list | None = None) -> int:
    """Run mcpstudio with `argv` (default: sys.argv[1:]); return the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        options, words = parse_command_line(argv)
        ended = argv[:len(argv) - len(words)][-1:] == ["--"]  # `-- check` runs a command named check
        command = words[0] if words and words[0] in SUBCOMMANDS and not ended else None
        if command == "init":
            _need("config")
            return init_config(words[1:])
        if command is not None:
            options, words = parse_command_line(words[1:], options)
            if words:
                hint = (" (did you mean %s --config %s?)" % (command, words[0])
                        if words[0].endswith((".json", ".jsonc")) else "; a template goes in the config file")
                raise UsageError("%s takes options only, not %r%s" % (command, " ".join(words), hint))
        if options["help"]:
            print(help_text())
            return 0
        if options["version"]:
            print("mcpstudio %s" % __version__)
            return 0
        config = options["config"]
        if config is None and command is not None:
            config = default_config_path()
            if not os.path.exists(config):
                raise UsageError("%s needs --config FILE (or a config at %s; create one with "
                                 "mcpstudio init NAME --command CMD)" % (command, config))
        if not words and not options["root_directory"] and config is None:
            raise UsageError("no command given; e.g. mcpstudio echo \"{message}\" (see --help)")
        secrets = [pair.partition("=")[2] for pair in options["env"]]
        log = Log(debug=bool(options["debug"]), path=options["log"], secrets=secrets)
        if command == "check":
            _need("config")
            return check_config(config, log, options)
        if command == "status":
            _need("aggregator")
            return status_command(config, log, options)
        server, runner = _build_server(options, words, log, config)
    except UsageError as exc:
        sys.stderr.write("mcpstudio: error: %s\n%s\n" % (exc, USAGE))
        return 2
    except TemplateError as exc:
        sys.stderr.write("mcpstudio: error: bad template: %s\n" % exc)
        return 2
    except ConfigError as exc:
        sys.stderr.write("mcpstudio: error: %s\n" % exc)
        return 1
    except BrokenPipeError:  # `mcpstudio check | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        sys.stderr.write("mcpstudio: error: %s\n" % exc)
        return 1
    log.debug("mcpstudio %s on Python %s: %s", __version__, sys.version.split()[0], server.title)
    if options["http"] is not None:
        _need("http")
        return run_http(server, runner, log, options)
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
