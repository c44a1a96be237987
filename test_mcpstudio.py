"""Tests for mcpstudio: `python3 -m unittest -v`.

Most tests drive the real program the way a client does: they spawn
`mcpstudio.py` as a subprocess, speak JSON-RPC over its stdin/stdout, and
check the replies and the processes left behind. Pure parts (template
parser, schema validator, naming) get direct, table-driven tests.

Interop tests use real peers (the official MCP Python SDK, the MCP Inspector
CLI) when they are installed, and skip cleanly when they are not. `.ci/run`
installs them and points MCPSTUDIO_SDK_PYTHON / MCPSTUDIO_INSPECTOR at them.
"""

import collections
import contextlib
import asyncio
import atexit
import base64
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

import mcpstudio
from mcpstudio import Template, TemplateError, ToolError, safe_name, validate

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = os.path.join(HERE, "mcpstudio.py")
PY = sys.executable
# How the tests start a server or a subcommand: `python3 -m mcpstudio`, as an installed user
# does, from the bytecode setUpModule caches. The script form,
# `python3 mcpstudio.py`, compiles 12,700 lines at every start (a quarter of a second of CPU
# that six suites side by side on two cores cannot spare, hundreds of times over): only the
# tests of the README's own commands run it, and the interop tests that start it as a user would.
SERVER = [PY, "-c", "import runpy, sys; sys.path.insert(0, %r); sys.argv[0] = %r; "
                    "runpy.run_module('mcpstudio', run_name='__main__', alter_sys=True)" % (HERE, MODULE)]
WAIT = 15.0  # the longest any single wait in these tests may take
# A tools/list waits this long for MCP servers with nothing cached (2 s by default): CI runs six
# suites at once on two cores, where a Python server can take longer than 2 s to start. The tests
# of the short wait itself set it back to 2.
os.environ.setdefault("MCPSTUDIO_LIST_WAIT", "8")


def setUpModule():
    """unittest's hook, before the first test: cache the bytecode of mcpstudio.py and of this file.
    Every server a test starts imports mcpstudio, and every fake upstream this file, hundreds of
    times a suite; where PYTHONDONTWRITEBYTECODE is set (as on the CI machine) each would compile
    them again: 0.3 CPU seconds a start."""
    import importlib.util
    import py_compile
    for path in (MODULE, os.path.abspath(__file__)):
        py_compile.compile(path, cfile=importlib.util.cache_from_source(path), doraise=True)


def alive(pid: int) -> bool:
    """True if `pid` is a running process (zombies count as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def wait_until(predicate, timeout=WAIT, interval=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


class McpProcess:
    """A running mcpstudio, spoken to as an MCP client would over stdio."""

    def __init__(self, *args, cmd=None, env=None, cwd=None, stderr=subprocess.PIPE):
        self.argv = cmd or SERVER + list(args)
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr, env=env, cwd=cwd)
        self.lock = threading.Condition()
        self.responses = {}
        self.notifications = []
        self.stdout_lines = []   # every raw line the server wrote to stdout
        self.stderr = []
        self.next_id = 100
        self.readers = [threading.Thread(target=self._read_stdout, daemon=True)]
        if self.proc.stderr is not None:
            self.readers.append(threading.Thread(target=self._read_stderr, daemon=True))
        for reader in self.readers:
            reader.start()

    def _read_stdout(self):
        for line in self.proc.stdout:
            with self.lock:
                self.stdout_lines.append(line)
                try:
                    message = json.loads(line)
                except ValueError:
                    self.lock.notify_all()
                    continue
                items = message if isinstance(message, list) else [message]
                for item in items:
                    if "method" in item:
                        self.notifications.append(item)
                    else:
                        self.responses[item.get("id")] = item
                if isinstance(message, list):
                    self.responses[("batch", len(self.stdout_lines))] = message
                self.lock.notify_all()

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def stderr_when(self, predicate, timeout=WAIT) -> str:
        """stderr so far, once `predicate(text)` holds or `timeout` passed: its reader thread may
        lag behind stdout's on a busy machine, though the server wrote the line first."""
        wait_until(lambda: predicate("".join(self.stderr)), timeout)
        return "".join(self.stderr)

    def context(self) -> str:
        """What to print when a test fails: the command, exit code and output."""
        return "\ncommand: %s\nexit: %s\nstdout: %s\nstderr: %s" % (
            self.argv, self.proc.poll(), b"".join(self.stdout_lines[-20:])[-3000:],
            "".join(self.stderr)[-3000:])

    def send_raw(self, data: bytes):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message):
        self.send_raw(json.dumps(message).encode() + b"\n")

    def wait_response(self, request_id, timeout=WAIT):
        with self.lock:
            if not self.lock.wait_for(lambda: request_id in self.responses, timeout):
                raise AssertionError("no response to id %r within %s s%s" % (request_id, timeout, self.context()))
            return self.responses[request_id]

    def request(self, method, params=None, timeout=WAIT, request_id=None):
        if request_id is None:
            self.next_id += 1
            request_id = self.next_id
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.wait_response(request_id, timeout)

    def initialize(self, version="2025-11-25", timeout=WAIT):
        reply = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                            "clientInfo": {"name": "test", "version": "0"}}, timeout=timeout)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def call(self, name, arguments, timeout=WAIT, meta=None, request_id=None):
        params = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        reply = self.request("tools/call", params, timeout, request_id)
        if "result" not in reply:
            raise AssertionError("tools/call %s answered no result: %s%s" % (name, json.dumps(reply), self.context()))
        return reply["result"]

    def notifications_of(self, method):
        with self.lock:
            return [n for n in self.notifications if n["method"] == method]

    def close(self, timeout=WAIT) -> int:
        """Close stdin (how clients stop a server) and wait for the exit code."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        code = self.proc.wait(timeout)
        for reader in self.readers:  # everything it wrote is read
            reader.join(timeout)
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # Stop it the way clients do (stdin closed, then SIGTERM), so a server measured by
        # coverage saves its data; SIGKILL only for one that will not go.
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(3)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.terminate()
                try:
                    self.proc.wait(3)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(WAIT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


def text_of(result) -> str:
    return "".join(c.get("text", "") for c in result["content"])


class ScratchDir(unittest.TestCase):
    """A TestCase with a temporary folder and helper scripts in it."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mcpstudio-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def script(self, name, body, executable=True) -> str:
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(textwrap.dedent(body))
        if executable:
            os.chmod(path, 0o755)
        return path

    def pid_sleeper(self) -> str:
        """A script that records its pid and a grandchild's pid, then sleeps."""
        return self.script("sleeper.py", """\
            import os, subprocess, sys, time
            out = sys.argv[1]
            grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            with open(out + ".tmp", "w") as f:
                f.write("%d %d" % (os.getpid(), grandchild.pid))
            os.rename(out + ".tmp", out)
            time.sleep(60)
            """)

    def stubborn_sleeper(self) -> str:
        """Like pid_sleeper, but both processes ignore SIGTERM (only SIGKILL stops them)."""
        return self.script("stubborn.py", """\
            import os, signal, subprocess, sys, time
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            out = sys.argv[1]
            grandchild = subprocess.Popen([sys.executable, "-c",
                "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"])
            time.sleep(0.3)  # let the grandchild install its handler
            with open(out + ".tmp", "w") as f:
                f.write("%d %d" % (os.getpid(), grandchild.pid))
            os.rename(out + ".tmp", out)
            if len(sys.argv) > 2:
                sys.exit(0)  # leave the grandchild behind, detached from our pipes
            time.sleep(60)
            """)

    def read_pids(self, path):
        self.assertTrue(wait_until(lambda: os.path.exists(path)), "the command never started")
        with open(path) as f:
            return [int(p) for p in f.read().split()]


# --------------------------------------------------------------------------
# Pure parts: templates, schema, rendering, naming, validation
# --------------------------------------------------------------------------

class TemplateTests(unittest.TestCase):
    # Each row: template words, expected schema properties (key -> (type, required)),
    # arguments, expected argv. This is the table the README's syntax section shows.
    TABLE = [
        (["echo", "{message}"], {"message": ("string", True)},
         {"message": "hi"}, ["echo", "hi"]),
        (["echo", "{{message}}"], {"message": ("string", True)},
         {"message": "hi"}, ["echo", "hi"]),
        (["ls", "[path]"], {"path": ("string", False)},
         {}, ["ls"]),
        (["ls", "[path]"], {"path": ("string", False)},
         {"path": "/tmp"}, ["ls", "/tmp"]),
        (["cat", "{files...}"], {"files": ("array", True)},
         {"files": ["a", "b c"]}, ["cat", "a", "b c"]),
        (["ls", "[paths...]"], {"paths": ("array", False)},
         {}, ["ls"]),
        (["ls", "[--all]", "[-l]"], {"all": ("boolean", False), "l": ("boolean", False)},
         {"all": True, "l": False}, ["ls", "--all"]),
        (["git", "commit", "[--dry-run]"], {"dry_run": ("boolean", False)},
         {"dry_run": True}, ["git", "commit", "--dry-run"]),
        (["echo", "--message={text}"], {"text": ("string", True)},
         {"text": "a b"}, ["echo", "--message=a b"]),
        (["curl", "https://host/{path}"], {"path": ("string", True)},
         {"path": "x/y"}, ["curl", "https://host/x/y"]),
        (["echo", "{greeting},{name}!"], {"greeting": ("string", True), "name": ("string", True)},
         {"greeting": "Hello", "name": "World"}, ["echo", "Hello,World!"]),
        (["curl", "http[s]://host"], {"s": ("string", False)},
         {}, ["curl", "http://host"]),
        (["tool", "--tags={tags...}"], {"tags": ("array", True)},
         {"tags": ["a", "b"]}, ["tool", "--tags=a,b"]),
        (["tool", "--name=[x]"], {"x": ("string", False)},
         {}, ["tool", "--name="]),
        (["echo", "{my-var}"], {"my_var": ("string", True)},
         {"my_var": "v"}, ["echo", "v"]),
        (["cp", "{f}", "{f}.bak"], {"f": ("string", True)},
         {"f": "a"}, ["cp", "a", "a.bak"]),
        (["echo", "{x}", "[x]"], {"x": ("string", True)},
         {"x": "1"}, ["echo", "1", "1"]),
        (["echo", '{"a":1}', "{ }", "[0-9]+"], {},
         {}, ["echo", '{"a":1}', "{ }", "[0-9]+"]),
        (["grep", r"\[a-z]", r"\{name}"], {},
         {}, ["grep", "[a-z]", "{name}"]),
        (["echo", r"C:\Users\\{user}", r"C:\bin\x"], {"user": ("string", True)},
         {"user": "me"}, ["echo", r"C:\Users\me", r"C:\bin\x"]),
        (["echo", "{x}"], {"x": ("string", True)},
         {"x": ""}, ["echo", ""]),
        (["say", "[--voice={voice}]", "{text}"], {"voice": ("string", False), "text": ("string", True)},
         {"text": "hi"}, ["say", "hi"]),
        (["say", "[--voice={voice}]", "{text}"], {"voice": ("string", False), "text": ("string", True)},
         {"text": "hi", "voice": "Alex"}, ["say", "--voice=Alex", "hi"]),
        (["x", "a[-{p}-{q}]b"], {"p": ("string", False), "q": ("string", False)},
         {"p": "1"}, ["x", "ab"]),
        (["x", "a[-{p}-{q}]b"], {"p": ("string", False), "q": ("string", False)},
         {"p": "1", "q": "2"}, ["x", "a-1-2b"]),
        (["ls", "[--sort={key}]", "{key}"], {"key": ("string", True)},
         {"key": "size"}, ["ls", "--sort=size", "size"]),
        (["grep", "[x{a-z}]"], {"a-z".replace("-", "_"): ("string", False)},
         {}, ["grep"]),
        (["grep", r"\[abc]", "[^x]"], {},
         {}, ["grep", "[abc]", "[^x]"]),
        (["sha256sum", "{photo:file}"], {"photo": ("string", True)},
         {"photo": "/tmp/p.png"}, ["sha256sum", "/tmp/p.png"]),
        (["cat", "[notes:file # the notes]"], {"notes": ("string", False)},
         {}, ["cat"]),
        (["echo", '{"a":file}', "{a:b}", "{x:files}", "{x...:file}", r"\{x:file}", "http://host:{port}"],
         {"port": ("string", True)}, {"port": "80"},
         ["echo", '{"a":file}', "{a:b}", "{x:files}", "{x...:file}", "{x:file}", "http://host:80"]),
    ]

    def test_table(self):
        # Every template form gives the documented schema and renders the documented argv.
        for words, props, args, argv in self.TABLE:
            with self.subTest(template=words):
                template = Template(words)
                schema = template.input_schema()
                got = {k: (v["type"], k in schema.get("required", ())) for k, v in schema["properties"].items()}
                self.assertEqual(got, props)
                self.assertEqual(validate(args, schema), [])
                self.assertEqual(template.render(args), argv)

    def test_descriptions(self):
        # Text after the first '#' is the property's description, spaces allowed.
        schema = Template(["git", "log", "{path # file to inspect}", "[n# how many # at most]",
                           "[--stat # show stats]", "{{who #someone}}"]).input_schema()
        self.assertEqual(schema["properties"]["path"]["description"], "file to inspect")
        self.assertEqual(schema["properties"]["n"]["description"], "how many # at most")
        self.assertEqual(schema["properties"]["stat"]["description"], "show stats")
        self.assertEqual(schema["properties"]["who"]["description"], "someone")

    def test_required_array_needs_an_item(self):
        # {files...} is required and must hold at least one item; [files...] may be empty.
        self.assertTrue(validate({"files": []}, Template(["cat", "{files...}"]).input_schema()))
        self.assertEqual(validate({"files": []}, Template(["cat", "[files...]"]).input_schema()), [])

    def test_dashed_names_accepted_either_way(self):
        # Arguments may use the dashed spelling of a property.
        template = Template(["echo", "{my-var}", "[--dry-run]"])
        args = mcpstudio.match_spellings({"my-var": "x", "dry-run": True}, template.fields)
        self.assertEqual(args, {"my_var": "x", "dry_run": True})
        self.assertEqual(template.render(args), ["echo", "x", "--dry-run"])

    def test_conflicting_kinds_are_a_template_error(self):
        # One name used as a string and as an array is the author's mistake, caught at parse time.
        with self.assertRaises(TemplateError) as cm:
            Template(["echo", "{x}", "{x...}"])
        self.assertIn("`x`", str(cm.exception))
        self.assertIn("word 3", str(cm.exception))
        with self.assertRaises(TemplateError):
            Template([])

    def test_dash_guard(self):
        # A value that would start an argument with '-' is refused, with exemptions.
        template = Template(["git", "log", "{path}"])
        with self.assertRaises(ToolError) as cm:
            template.render({"path": "--output=/etc/x"})
        self.assertIn("path", str(cm.exception))
        self.assertEqual(template.render({"path": "-5"}), ["git", "log", "-5"])            # a number
        self.assertEqual(template.render({"path": "--x"}, allow_dash_values=True), ["git", "log", "--x"])
        self.assertEqual(Template(["git", "log", "--", "{path}"]).render({"path": "-x"}),
                         ["git", "log", "--", "-x"])                                       # after --
        self.assertEqual(Template(["git", "{args...}"]).render({"args": ["--stat"]}),
                         ["git", "--stat"])                                                # arrays
        self.assertEqual(Template(["x", "--m={v}"]).render({"v": "-y"}), ["x", "--m=-y"])  # mid-word
        with self.assertRaises(ToolError):
            Template(["x", "{v}.txt"]).render({"v": "-rf"})

    def test_display_and_command_name(self):
        # The default description shows the template without field descriptions.
        template = Template(["/usr/bin/git-lfs", "log", "[--oneline]", "{path # file}", "a b", "[-n={n # count}]"])
        self.assertEqual(template.display(), '/usr/bin/git-lfs log [--oneline] {path} "a b" [-n={n}]')
        for words, name in ((["/usr/bin/say"], "say"), (["git-status"], "git-status"),
                            (["tool.py", "{x}"], "tool"), ([r"C:\bin\jq.exe"], "jq"), ([".hidden"], ".hidden")):
            self.assertEqual(Template(words).command_name(), name)


class SafeNameTests(unittest.TestCase):
    def test_table(self):
        # Names become ^[A-Za-z0-9_-]{1,max}$; long or taken names get a stable hash suffix.
        rows = [
            ("echo", 48, (), "echo"),
            ("git_status", 48, (), "git_status"),
            ("io.github.x/y", 48, (), "io_github_x_y"),
            ("", 48, (), "tool"),
            ("héllo wörld", 48, (), "h_llo_w_rld"),
            ("abcdefghijklmnopqrstuvwxyz", 26, (), "abcdefghijklmnopqrstuvwxyz"),
            ("abcdefghijklmnopqrstuvwxyz", 20, (), "abcdefghijklm_" + __import__("hashlib").sha256(b"abcdefghijklmnopqrstuvwxyz").hexdigest()[:6]),
            ("echo", 16, ("echo",), "echo_" + __import__("hashlib").sha256(b"echo").hexdigest()[:6]),
        ]
        for name, limit, taken, expected in rows:
            with self.subTest(name=name):
                self.assertEqual(safe_name(name, limit, taken), expected)

    def test_shortening_is_deterministic_and_distinct(self):
        long_a, long_b = "a" * 80 + "_one", "a" * 80 + "_two"
        short_a, short_b = safe_name(long_a, 48), safe_name(long_b, 48)
        self.assertEqual(len(short_a), 48)
        self.assertNotEqual(short_a, short_b)
        self.assertEqual(short_a, safe_name(long_a, 48))
        self.assertRegex(short_a, r"^[A-Za-z0-9_-]+$")

    def test_collisions(self):
        # a.b and a/b both clean to a_b: the second gets a suffix, and never an existing name.
        first = safe_name("a.b", 48, ())
        second = safe_name("a/b", 48, {first})
        self.assertEqual(first, "a_b")
        self.assertNotEqual(second, first)
        self.assertRegex(second, r"^a_b_[0-9a-f]{6}$")
        third = safe_name("a/b", 48, {first, second})
        self.assertNotIn(third, {first, second})


class ValidateTests(unittest.TestCase):
    SCHEMA = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
            "count": {"type": "integer", "minimum": 1, "maximum": 10},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "mode": {"enum": ["fast", "slow"]},
            "any": {},
        },
        "required": ["name"],
        "additionalProperties": False,
    }

    def test_table(self):
        # Each row: arguments and the fragments each error message must contain ([] = valid).
        rows = [
            ({"name": "abc"}, []),
            ({"name": "abc", "count": 3, "ratio": 1, "flag": False, "tags": ["x"], "mode": "fast", "any": [1]}, []),
            ({"name": "abc", "count": 3.0}, []),
            ({}, [["`name`", "required"]]),
            ({"name": 5}, [["`name`", "string", "integer"]]),
            ({"name": "a"}, [["`name`", "at least 2"]]),
            ({"name": "abcdef"}, [["`name`", "at most 5"]]),
            ({"name": "AB"}, [["`name`", "pattern"]]),
            ({"name": "ab", "count": 0}, [["`count`", "at least 1"]]),
            ({"name": "ab", "count": True}, [["`count`", "integer", "boolean"]]),
            ({"name": "ab", "count": 1.5}, [["`count`", "integer"]]),
            ({"name": "ab", "ratio": "1"}, [["`ratio`", "number", "string"]]),
            ({"name": "ab", "tags": []}, [["`tags`", "at least 1 item"]]),
            ({"name": "ab", "tags": ["x", 2]}, [["`tags`[1]", "string"]]),
            ({"name": "ab", "mode": "medium"}, [["`mode`", '"fast"', '"slow"']]),
            ({"name": "ab", "bogus": 1}, [["`bogus`", "not a known argument"]]),
            ({"name": "ab", "flag": "yes"}, [["`flag`", "boolean"]]),
        ]
        for args, expected in rows:
            with self.subTest(args=args):
                errors = validate(args, self.SCHEMA)
                self.assertEqual(len(errors), len(expected), errors)
                for message, fragments in zip(errors, expected):
                    for fragment in fragments:
                        self.assertIn(fragment, message)

    def test_not_an_object(self):
        self.assertEqual(validate([1], {"type": "object"}), ["the value must be object, not array"])


class PlainCodeTests(unittest.TestCase):
    def test_no_code_out_of_sight(self):
        # The module is plain Python: no exec/compile of its own text, no module __getattr__,
        # no string literal that holds code; every class is a top-level statement.
        import ast
        with open(MODULE, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        calls = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id in ("exec", "eval", "compile")]
        self.assertEqual(calls, [])
        top = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        self.assertNotIn("__getattr__", top)
        code_strings = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                        and n.value.count("\n") > 2 and any(line.lstrip().startswith(("def ", "class ", "import ")) for line in n.value.splitlines())]
        # One exception, as CPython's zipapp.MAIN_TEMPLATE: the `__main__.py` that `mcpstudio zipapp` writes into
        # the archive (ToolingTests.test_zipapp_carries_bytecode_and_source runs each of its branches).
        zipapp_main = [n.value.lineno for n in tree.body if isinstance(n, ast.Assign)
                       and getattr(n.targets[0], "id", None) == "_ZIPAPP_MAIN"]
        self.assertEqual(code_strings, zipapp_main)
        for name in ("ConfigLoader", "ScriptDirectory", "Aggregator", "HttpServer", "CommandTemplate"):
            self.assertIn(name, top)

    def test_inspect_and_pydoc_see_every_class(self):
        # inspect finds the source of every subsystem; pydoc's help lists them.
        import inspect
        import pydoc
        for obj, text in ((mcpstudio.ConfigLoader.load, "    def load(self, runner"),
                          (mcpstudio.ScriptDirectory.rescan, "    async def rescan(self"),
                          (mcpstudio.CommandTemplate.render_shell, "    def render_shell(self")):
            with self.subTest(obj=obj.__qualname__):
                self.assertTrue(inspect.getsource(obj).startswith(text))
        page = pydoc.render_doc(mcpstudio, renderer=pydoc.plaintext)
        for name in ("ConfigLoader", "Upstream", "HttpServer", "Aggregator"):
            self.assertIn("class %s" % name, page)

    def test_zipapp_serves_every_mode(self):
        # From a zipapp, config mode checks and serves (the module runs from inside the zip).
        with tempfile.TemporaryDirectory() as folder:
            os.mkdir(os.path.join(folder, "pyz"))
            shutil.copy(MODULE, os.path.join(folder, "pyz", "__main__.py"))
            pyz = os.path.join(folder, "m.pyz")
            subprocess.run([PY, "-m", "zipapp", os.path.join(folder, "pyz"), "-o", pyz], check=True, timeout=WAIT)
            config = os.path.join(folder, "c.json")
            with open(config, "w") as f:
                json.dump({"tools": [{"name": "hi", "command": "echo hi"}]}, f)
            proc = subprocess.run([PY, pyz, "check", "--config", config], capture_output=True, text=True, timeout=WAIT)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with McpProcess(cmd=[PY, pyz, "serve", "--config", config]) as server:
                server.initialize()
                self.assertEqual(text_of(server.call("hi", {})), "hi\n")


def processes_with(tag: str) -> list:
    """Walk the process table: pids (not zombies) whose command line holds `tag`."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/cmdline" % name, "rb") as f:
                    if tag.encode() in f.read() and alive(int(name)):
                        found.append(int(name))
            except OSError:
                pass
    return found


@unittest.skipUnless(sys.platform.startswith("linux"), "walks /proc")
class OrphanTests(ScratchDir):
    """SIGKILL of mcpstudio mid-call leaves nothing running, in every mode."""

    def setUp(self):
        super().setUp()
        self.tag = "mcpstudio-orphan-%d-%d" % (os.getpid(), id(self))
        # A command that starts a grandchild in its group and one that leaves the group
        # (setsid), writes their pids, then sleeps; every process carries the tag in argv.
        self.sleeper = self.script("family.py", """\
            import json, os, subprocess, sys, time
            if sys.argv[1:] == ["--help"]:
                print(json.dumps({"description": "sleeps"}))
                print(json.dumps({"out": {"required": True, "value_type": "string"}}), file=sys.stderr)
                sys.exit(0)
            out = os.environ.get("OUT") or sys.argv[1]
            tag = sys.argv[-1] if len(sys.argv) > 2 else "%s"
            sleep = [sys.executable, "-c", "import time; time.sleep(60)", tag]
            stay = subprocess.Popen(sleep)
            leave = subprocess.Popen(sleep, start_new_session=True)
            with open(out + ".tmp", "w") as f:
                f.write("%%d %%d %%d" %% (os.getpid(), stay.pid, leave.pid))
            os.rename(out + ".tmp", out)
            time.sleep(60)
            """ % self.tag)
        self.addCleanup(self._kill_tagged)

    def _kill_tagged(self):
        for pid in processes_with(self.tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def _kill_mid_call(self, server, arguments):
        pids = os.path.join(self.dir, "pids")
        server.initialize()
        server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                     "params": {"name": server.tool, "arguments": arguments}})
        procs = self.read_pids(pids)
        self.assertTrue(all(alive(p) for p in procs))
        server.proc.kill()
        server.proc.wait(WAIT)
        for pid in procs:
            self.assertTrue(wait_until(lambda pid=pid: not alive(pid), 8), "pid %d outlived a SIGKILLed mcpstudio" % pid)
        self.assertTrue(wait_until(lambda: not processes_with(self.tag), 8), processes_with(self.tag))

    def test_template_mode(self):
        # Template mode: the child, its grandchild and a grandchild in its own session all end.
        with McpProcess("--name", "s", PY, self.sleeper, "{out}", self.tag) as server:
            server.tool = "s"
            self._kill_mid_call(server, {"out": os.path.join(self.dir, "pids")})

    def test_config_mode(self):
        # Config mode (a `tools` entry, with an environment): the same.
        config = os.path.join(self.dir, "c.json")
        with open(config, "w") as f:
            json.dump({"tools": [{"name": "s", "command": "%s %s {out} %s" % (PY, self.sleeper, self.tag),
                                  "environment": {"X": "1"}}]}, f)
        with McpProcess("serve", "--config", config) as server:
            server.tool = "s"
            self._kill_mid_call(server, {"out": os.path.join(self.dir, "pids")})

    def test_script_mode(self):
        # Script mode (--root-directory): the same, for a script's call.
        root = os.path.join(self.dir, "scripts")
        os.mkdir(root)
        shutil.copy(self.sleeper, os.path.join(root, "family"))
        with open(os.path.join(root, "family")) as f:
            body = f.read()
        with open(os.path.join(root, "family"), "w") as f:
            f.write("#!%s\n%s" % (PY, body))
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"), OUT=os.path.join(self.dir, "pids"))
        with McpProcess("--root-directory", root, env=env) as server:
            server.tool = "family"
            self._kill_mid_call(server, {"out": "x"})

    def test_kill_right_after_spawn(self):
        # SIGKILL at moments around an MCP server's spawn (before or just after it is registered
        # with the watchdog) leaves nothing running: the watchdog also finds children by their marker.
        config = os.path.join(self.dir, "c.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"x": {"command": PY, "args": [self.sleeper, os.path.join(self.dir, "p"),
                                                                    self.tag]}}}, f)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        for delay in (0.15, 0.2, 0.25, 0.3, 0.35, 0.4):
            with McpProcess("serve", "--config", config, env=env) as server:
                server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
                time.sleep(delay)
                server.proc.kill()
                server.proc.wait(WAIT)
        self.assertTrue(wait_until(lambda: not processes_with(self.tag), 8), processes_with(self.tag))

    def test_marked_processes(self):
        # The watchdog finds a process by its environment marker, from /proc (Linux) and from `ps`
        # (the macOS way, run here too); another marker, or a prefix of it, finds nothing. Popen
        # returns while exec is still setting up the new environment (its pipe closes first), so
        # on a busy machine the marker shows a moment later: polled.
        child = subprocess.Popen(["sleep", "30"], env=dict(os.environ, MCPSTUDIO_WATCHDOG="t-%s" % self.tag))
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        for use_proc in (True, False):
            with self.subTest(use_proc=use_proc):
                wait_until(lambda use_proc=use_proc: mcpstudio._marked_processes("t-%s" % self.tag, use_proc), 5)
                self.assertEqual(mcpstudio._marked_processes("t-%s" % self.tag, use_proc), [child.pid])
                self.assertEqual(mcpstudio._marked_processes("t-%s-other" % self.tag, use_proc), [])
                self.assertEqual(mcpstudio._marked_processes("t-%s" % self.tag[:-1], use_proc), [])

    def test_no_watchdog_before_a_child(self):
        # Cold start pays nothing: the watchdog starts with the first child, not before.
        with McpProcess("echo", "{message}") as server:
            server.initialize()
            server.request("tools/list")
            self.assertEqual(self._children(server.proc.pid), [])
            server.call("echo", {"message": "hi"})
            self.assertTrue(wait_until(lambda: len(self._children(server.proc.pid)) == 1), server.context())
            self.assertEqual(server.close(), 0)

    @staticmethod
    def _children(pid) -> list:
        found = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open("/proc/%s/stat" % name) as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == pid and fields[0] != "Z":
                    found.append(int(name))
        return found


class StdioFramingTests(unittest.TestCase):
    """The stdio framing parser, in-process: bytes in, messages or errors out."""

    def frames(self, chunks, limit=100):
        """Feed `chunks` then end the stream; (bytes, framing) or ("error: <message>", framing) per item."""
        framing = mcpstudio.StdioFraming(limit)
        items = []
        for chunk in chunks:
            items += framing.feed(chunk)
        items += framing.end()
        return [("error: " + item.message if isinstance(item, mcpstudio.McpError) else item, kind)
                for item, kind in items]

    def test_table(self):
        # Each row: the stream (as chunks) and what comes out of it, in order.
        NL, CL = mcpstudio.NEWLINE, mcpstudio.CONTENT_LENGTH
        big = "error: Parse error: a message larger than 100 bytes was skipped"
        rows = [
            ("newline JSON", [b'{"a":1}\n{"b":2}\n'], [(b'{"a":1}', NL), (b'{"b":2}', NL)]),
            ("CRLF", [b'{"a":1}\r\n'], [(b'{"a":1}', NL)]),
            ("blank lines", [b'\n\r\n  \n{"a":1}\n\n'], [(b'{"a":1}', NL)]),
            ("split anywhere", [b'{"a"', b':1}', b'\n{', b'}'], [(b'{"a":1}', NL), (b'{}', NL)]),
            ("last line without newline", [b'{"a":1}'], [(b'{"a":1}', NL)]),
            ("Content-Length", [b'Content-Length: 7\r\n\r\n{"a":1}{"b":2}\n'], [(b'{"a":1}', CL), (b'{"b":2}', NL)]),
            ("Content-Length, byte by byte", [bytes([c]) for c in b'content-length:2\n\n{}'], [(b'{}', CL)]),
            ("other headers", [b'Content-Length: 2\r\nContent-Type: application/json\r\n\r\n{}'], [(b'{}', CL)]),
            ("body holding newlines", [b'Content-Length: 4\r\n\r\n{\n}\n'], [(b'{\n}\n', CL)]),
            ("negative Content-Length", [b'Content-Length: -3\r\n\r\n{"a":1}\n{"b":2}\n'],
             [("error: Parse error: bad header Content-Length: -3: Content-Length must be a number of bytes", CL),
              (b'{"a":1}', NL), (b'{"b":2}', NL)]),
            ("non-numeric Content-Length", [b'Content-Length: ten\r\n\r\n{}\n'],
             [("error: Parse error: bad header Content-Length: ten: Content-Length must be a number of bytes", CL),
              (b'{}', NL)]),
            ("huge Content-Length", [b'Content-Length: %s\r\n\r\n{}\n' % (b"9" * 60)],
             [("error: Parse error: bad header Content-Length: %s: Content-Length must be a number of bytes"
               % ("9" * 60), CL), (b'{}', NL)]),
            ("Content-Length over the limit: skipped in step",
             [b'Content-Length: 150\r\n\r\n', b"x" * 100, b"x" * 50 + b'{"a":1}\n'], [(big, CL), (b'{"a":1}', NL)]),
            ("lying Content-Length (short)", [b'Content-Length: 3\r\n\r\n{"a":1}\n{}\n'],
             [(b'{"a', CL), (b'":1}', NL), (b'{}', NL)]),
            ("lying Content-Length (long)", [b'Content-Length: 50\r\n\r\n{"a":1}\n'],
             [("error: Parse error: the input ended inside a Content-Length message", CL)]),
            ("a bad header, then a line that is no header: the line is read",
             [b'Content-Length: abc\n{"a":1}\n'],
             [("error: Parse error: bad header Content-Length: abc: Content-Length must be a number of bytes", CL),
              (b'{"a":1}', NL)]),
            ("a header, then JSON without the blank line", [b'Content-Length: 7\n{"a":1}\n'],
             [("error: Parse error: a Content-Length header not followed by a blank line", CL), (b'{"a":1}', NL)]),
            ("a bad header, then a good message", [b'Content-Length: abc\nContent-Length: 7\r\n\r\n{"a":1}'],
             [("error: Parse error: bad header Content-Length: abc: Content-Length must be a number of bytes", CL),
              (b'{"a":1}', CL)]),
            ("headers that never end", [b'Content-Length: 5\r\n'],
             [("error: Parse error: the input ended inside a Content-Length message", CL)]),
            ("oversized line, one chunk", [b"x" * 101 + b'\n{}\n'], [(big, NL), (b'{}', NL)]),
            ("oversized line, many chunks", [b"x" * 60, b"x" * 60, b"x" * 60, b'\n{}\n'], [(big, NL), (b'{}', NL)]),
            ("line of exactly the limit", [b"x" * 100 + b"\n"], [(b"x" * 100, NL)]),
        ]
        for name, chunks, expected in rows:
            with self.subTest(name):
                self.assertEqual(self.frames(chunks), expected)

    def test_linear(self):
        # A 32 MB line in 64 KiB chunks is read in linear time (no rebuild of the buffer per chunk).
        framing = mcpstudio.StdioFraming(64 << 20)
        chunk = b"x" * (1 << 16)
        started = time.monotonic()
        for _ in range(512):
            self.assertEqual(framing.feed(chunk), [])
        self.assertEqual([len(item) for item, _ in framing.feed(b"\n")], [32 << 20])
        self.assertLess(time.monotonic() - started, 2.0)


def rss_kib(pid: int) -> int:
    """Resident memory of `pid` in KiB (VmRSS), 0 once it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


@unittest.skipUnless(sys.platform.startswith("linux"), "reads /proc")
class StdioStreamTests(ScratchDir):
    """The stdio transport end to end: framing faults, a client that stops reading, a client gone."""

    @unittest.skipUnless(os.name == "posix", "select() polls pipes on POSIX only")
    def test_the_fast_path_writes_only_what_cannot_block(self):
        # The loop writes a reply itself only when the write is whole and cannot block: at most
        # PIPE_BUF bytes (4096 on Linux, 512 on macOS) into a pipe with room; else the writer thread.
        import select
        r, w = os.pipe()
        try:
            self.assertTrue(mcpstudio._writable_now(w, select.PIPE_BUF))
            self.assertFalse(mcpstudio._writable_now(w, select.PIPE_BUF + 1))
            os.set_blocking(w, False)
            with self.assertRaises(BlockingIOError):
                while True:
                    os.write(w, b"x" * 65536)
            self.assertFalse(mcpstudio._writable_now(w, 1))
        finally:
            os.close(r)
            os.close(w)

    def test_negative_content_length(self):
        # `Content-Length: -3` is answered with a parse error and the requests after it are answered.
        with McpProcess("echo", "{message}") as server:
            server.initialize()
            server.send_raw(b'Content-Length: -3\r\n\r\n{"jsonrpc":"2.0","id":"x","method":"ping"}\n')
            body = b'{"jsonrpc":"2.0","id":"y","method":"ping"}'
            server.send_raw(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            server.send({"jsonrpc": "2.0", "id": "z", "method": "ping"})

            def raw():
                with server.lock:
                    return b"".join(server.stdout_lines)
            self.assertTrue(wait_until(lambda: b'{"jsonrpc":"2.0","id":"z","result":{}}' in raw()), server.context())
            self.assertEqual(raw().count(b"Content-Length must be a number of bytes"), 1, server.context())
            self.assertIn(b'{"jsonrpc":"2.0","id":"x","result":{}}', raw())
            self.assertIn(b'{"jsonrpc":"2.0","id":"y","result":{}}', raw())

    def test_client_stops_reading(self):
        # 300 calls printing 0.9 MB each while the client reads nothing: mcpstudio's memory stays
        # bounded (it stops starting commands); once the client reads, every answer arrives once.
        big = os.path.join(self.dir, "big.txt")
        with open(big, "w") as f:
            f.write("x" * 900000)
        proc = subprocess.Popen(SERVER + ["--max-text", "1000000", "head", "-c", "900000", "{path}"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.addCleanup(proc.wait, WAIT)
        self.addCleanup(proc.kill)
        calls = [{"jsonrpc": "2.0", "id": i, "method": "tools/call",
                  "params": {"name": "head", "arguments": {"path": big}}} for i in range(300)]
        data = b"".join(json.dumps(m).encode() + b"\n" for m in calls)

        def write():
            try:
                proc.stdin.write(data)  # may block while mcpstudio does not read: that is the point
                proc.stdin.flush()
            except OSError:
                pass
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        peak, deadline = 0, time.monotonic() + 6
        while time.monotonic() < deadline:
            peak = max(peak, rss_kib(proc.pid))
            time.sleep(0.05)
        self.assertGreater(peak, 0)
        self.assertLess(peak, 200 << 10, "mcpstudio grew to %d MiB while the client did not read" % (peak >> 10))
        answers = {}
        for line in proc.stdout:
            message = json.loads(line)
            self.assertNotIn(message["id"], answers)
            answers[message["id"]] = message
            self.assertEqual(len(text_of(message["result"])), 900000, str(message)[:300])
            if len(answers) == 300:
                break
        self.assertEqual(sorted(answers), list(range(300)))
        self.assertLess(rss_kib(proc.pid), 200 << 10)
        proc.stdin.close()
        self.assertEqual(proc.wait(WAIT), 0)

    def test_client_gone(self):
        # A client that closes its end of stdout is noticed at the next write: its calls are
        # cancelled (children stopped) and mcpstudio exits, though stdin stays open.
        sleeper, pids = self.pid_sleeper(), os.path.join(self.dir, "pids")
        proc = subprocess.Popen(SERVER + ["--name", "s", PY, sleeper, "{out}"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.addCleanup(proc.wait, WAIT)
        self.addCleanup(proc.kill)
        self.addCleanup(proc.stdin.close)
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                                     "params": {"name": "s", "arguments": {"out": pids}}}).encode() + b"\n")
        proc.stdin.flush()
        procs = self.read_pids(pids)
        proc.stdout.close()
        started = time.monotonic()
        proc.stdin.write(b'{"jsonrpc":"2.0","id":10,"method":"ping"}\n')  # its answer meets EPIPE
        proc.stdin.flush()
        self.assertEqual(proc.wait(WAIT), 0)
        self.assertLess(time.monotonic() - started, mcpstudio.KILL_GRACE + 3)
        for pid in procs:
            self.assertTrue(wait_until(lambda pid=pid: not alive(pid), 5), "pid %d outlived its cancelled call" % pid)


class ExecValueTests(ScratchDir):
    """Values bound for a process (argv, environment, folder) are checked once, for every source."""

    def test_exec_problem_table(self):
        # Each row: argv, env, cwd, and the start of the sentence (None: fine).
        rows = [
            (["echo", "hi"], {"A": "1"}, "/tmp", None),
            (["echo", "a\0b"], None, None, "word 1 of the command line holds a NUL character"),
            (["e\0cho"], None, None, "the command holds a NUL character"),
            (["echo", "\ud800"], None, None, "word 1 of the command line holds a character this system cannot"),
            (["echo", 3], None, None, "word 1 of the command line is integer, not text"),
            (["echo"], {"A": "x\0"}, None, 'the environment variable "A" holds a NUL'),
            (["echo"], {"A=B": "x"}, None, 'the environment variable "A=B" holds an ='),
            (["echo"], {"": "x"}, None, 'the environment variable "" is empty or holds an ='),
            (["echo"], None, "/t\0mp", "the working folder holds a NUL"),
            ([b"echo", b"ok"], None, b"/tmp", None),
        ]
        for argv, env, cwd, expected in rows:
            with self.subTest(argv=argv, env=env, cwd=cwd):
                problem = mcpstudio.exec_problem(argv, env, cwd)
                if expected is None:
                    self.assertIsNone(problem)
                else:
                    self.assertTrue(problem and problem.startswith(expected), problem)

    def test_batch_file_rule(self):
        # Windows runs a .bat/.cmd program through cmd.exe, whose parsing Python's quoting does not
        # escape (BatBadBut): a word holding what cmd.exe acts on is refused. Off on POSIX by default.
        rows = [  # argv, and the start of the sentence (None: fine)
            (["C:\\node\\npx.cmd", "-y", "@scope/server", "a b", "x=1", "--port=3000", "--root=/data", "a b,-c", "x=/s"], None),
            (["tool.BAT", 'x" & calc & "'], "word 1 of the command line holds '\"' '&', which cmd.exe would act on"),
            (["tool.cmd", "ok", "%PATH%"], "word 2 of the command line holds '%'"),
            (["tool.cmd", "a|b", "c>d", "(e)", "f^g", "h!", "i\nj"], "word 1 of the command line holds '|'"),
            (["tool.cmd", "https://example.com/sse?a=1&b=2"], "word 1 of the command line holds '&'"),
            (["tool.cmd", "x,-rf"], "word 1 of the command line holds a , ; or = before an option's -"),
            (["tool.cmd", "x=-rf"], "word 1 of the command line holds a , ; or = before"),
            (["tool.cmd", "x;=/s"], "word 1 of the command line holds a , ; or = before"),
            (["tool.cmd", "C:\\dir\\"], "word 1 of the command line holds a backslash at its end"),
            (["run.cmd.", "a&b"], "word 1 of the command line holds '&'"),  # Windows drops the trailing dot
            ([b"tool.cmd", b"a&b"], "word 1 of the command line holds '&'"),
            (["tool.exe", 'x" & calc & "'], None),  # CreateProcess, no cmd.exe: list2cmdline quoting holds
            (["cmd.cmdx", "a&b"], None),
            (["tool.cmd"], None),
        ]
        for argv, expected in rows:
            with self.subTest(argv=argv):
                problem = mcpstudio.exec_problem(argv, batch=True)
                if expected is None:
                    self.assertIsNone(problem)
                else:
                    self.assertTrue(problem and problem.startswith(expected), problem)
                    self.assertIn("a batch file, through cmd.exe", problem)
                self.assertIsNone(mcpstudio.exec_problem(argv, batch=False))
        # A script-mode batch script gets its values as variables, which it expands as %MCPD_OPT_x%.
        self.assertIn("holds '&'", mcpstudio.batch_problem("C:\\scripts\\t.bat", "a & calc", batch=True))
        if os.name == "posix":
            self.assertIsNone(mcpstudio.exec_problem(["tool.cmd", "a&b"]))  # POSIX runs no cmd.exe

    def test_find_program(self):
        # CreateProcess appends only .exe to a bare name and looks in the current folder first: on
        # Windows `npx` is found as npx.cmd on the child's PATH with its PATHEXT (any spelling of the
        # names), and `git` as the git.exe on PATH, not one in the current folder.
        first, second = os.path.join(self.dir, "a"), os.path.join(self.dir, "b")
        for folder, names in ((first, ["npx.cmd", "git.exe", "both.exe", "both.cmd", "tool.com", "page.js"]),
                              (second, ["npx.exe", "only.bat", "plain"])):
            os.mkdir(folder)
            for name in names:
                open(os.path.join(folder, name), "w").close()
        os.mkdir(os.path.join(second, "dir.cmd"))
        path = os.pathsep.join(["", "relative", os.path.join(self.dir, "missing"), '"%s"' % first, second])
        env = {"Path": path, "PathExt": ".COM;.EXE;.BAT;.CMD;.JS;"}
        rows = [  # argv, env, the argv CreateProcess gets
            (["npx", "-y", "pkg"], env, [os.path.join(first, "npx.cmd"), "-y", "pkg"]),
            (["only"], env, [os.path.join(second, "only.bat")]),
            (["git", "log"], env, [os.path.join(first, "git.exe"), "log"]),
            (["tool"], env, [os.path.join(first, "tool.com")]),
            (["both"], env, [os.path.join(first, "both.exe")]),   # .EXE comes before .CMD in PATHEXT
            (["both"], {"PATH": path, "PATHEXT": ".CMD;.EXE"}, [os.path.join(first, "both.cmd")]),
            (["page"], env, ["page"]),                            # .js needs a host: CreateProcess cannot start it
            (["dir"], env, ["dir"]),                              # a folder named dir.cmd is no program
            (["npx.cmd"], env, [os.path.join(first, "npx.cmd")]),  # an extension of its own: that file on PATH
            (["git.EXE"], env, ["git.EXE"] if os.path.normcase("A") == "A" else [os.path.join(first, "git.EXE")]),
            (["page.js"], env, ["page.js"]),                      # not startable: left to CreateProcess
            ([b"npx"], env, [b"npx"]),                            # not text: exec_problem says so
            ([os.path.join(first, "npx")], env, [os.path.join(first, "npx")]),  # a folder of its own
            (["plain"], env, ["plain"]),                          # no extension at all: not startable
            (["nowhere"], env, ["nowhere"]),                      # not found: CreateProcess says so
            (["npx"], {"PATH": "relative" + os.pathsep + "a"}, ["npx"]),  # relative folders are not searched
            ([], env, []),
        ]
        old = os.getcwd()
        os.chdir(self.dir)  # so that `relative` and `a` would be found if relative folders were searched
        try:
            for argv, variables, expected in rows:
                with self.subTest(argv=argv, env=variables):
                    self.assertEqual(mcpstudio.find_program(argv, variables), expected)
        finally:
            os.chdir(old)

    def test_upstream_with_nul(self):
        # An upstream whose args hold a NUL is misconfigured from the start with a clear reason (it never
        # stays "starting"), the other server works, and servers_restart says why instead of -32603.
        fake = self.script("fake_mcp.py", FAKE_SERVER, executable=False)
        config = os.path.join(self.dir, "agg.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"bad": {"command": PY, "args": [fake, "--name", "x\u0000y"]},
                                      "good": {"command": PY, "args": [fake, "--name", "good"]}}}, f)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        with McpProcess("serve", "--config", config, env=env) as server:
            server.initialize()
            server.request("tools/list")
            reason = "word 3 of the command line holds a NUL character"

            def bad():
                servers = server.call("mcpstudio__servers_list", {})["structuredContent"]["servers"]
                return [s for s in servers if s["id"] == "bad"][0]
            self.assertEqual(bad()["status"], "misconfigured")
            self.assertIn(reason, json.dumps(bad()))
            reply = server.request("tools/call", {"name": "mcpstudio__servers_restart", "arguments": {"server_id": "bad"}})
            self.assertIn(reason, json.dumps(reply), reply)
            self.assertNotIn("strerror", json.dumps(reply))
            self.assertEqual(text_of(server.call("good__echo", {"text": "y"})), "good: y")

    def test_check_and_status_name_an_upstream_with_nul(self):
        # Issue 21: check and status report an upstream whose command, args, cwd or env hold a NUL, name
        # it and where, and exit non-zero; the clean server beside them is listed as usual.
        config = os.path.join(self.dir, "agg.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"args": {"command": "echo", "args": ["x\u0000y"]},
                                      "cwd": {"command": "echo", "cwd": "/tmp/\u0000"},
                                      "env": {"command": "echo", "env": {"K": "v\u0000"}},
                                      "command": {"command": "e\u0000cho"},
                                      "fine": {"command": "echo"}}}, f)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        expected = {"args": "mcpServers.args: word 1 of the command line holds a NUL",
                    "cwd": "mcpServers.cwd: the working folder holds a NUL",
                    "env": "mcpServers.env.env.K: a value cannot hold a NUL",
                    "command": "mcpServers.command: the command holds a NUL"}
        for subcommand in ("check", "status"):
            with self.subTest(subcommand=subcommand):
                proc = subprocess.run(SERVER + [subcommand, "--config", config], capture_output=True, text=True,
                                      timeout=WAIT, env=env, stdin=subprocess.DEVNULL)
                self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
                rows = {line.split()[0]: line for line in proc.stdout.splitlines() if line.split()}
                for server, reason in expected.items():
                    self.assertIn("error: %s: %s" % (config, reason), rows[server])
                self.assertIn("not cached yet", rows["fine"])


@unittest.skipUnless(os.name == "posix", "file names as bytes")
class ScriptNameTests(ScratchDir):
    def test_name_not_utf8(self):
        # A script named with bytes that are not UTF-8 is left out with one warning naming it;
        # no lone surrogate reaches tools/list (an SDK client would reject the whole list).
        root = os.path.join(self.dir, "scripts")
        os.mkdir(root)
        for name in (b"caf\xe9", b"good"):
            path = os.path.join(os.fsencode(root), name)
            with open(path, "w") as f:
                f.write("#!%s\nimport sys\nprint('{}') if sys.argv[1:] == ['--help'] else print('ok')\n" % PY)
            os.chmod(path, 0o755)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        with McpProcess("--root-directory", root, env=env) as server:
            server.initialize()
            tools = server.request("tools/list")["result"]["tools"]
            self.assertEqual([t["name"] for t in tools], ["good"])
            self.assertEqual(text_of(server.call("good", {})), "ok\n")
            server.close()
            with server.lock:
                for line in server.stdout_lines:
                    line.decode("utf-8")
                    self.assertNotIn(b"\\ud", line.lower())
            server.stderr_when(lambda text: "not valid UTF-8" in text)
            warnings = [line for line in server.stderr if "not valid UTF-8" in line]
            self.assertEqual(len(warnings), 1, server.stderr)
            self.assertIn("caf\\xe9", warnings[0])


class CommandOutputTests(ScratchDir):
    """How a command's output is read and served: linear buffering, cut binary output."""

    def test_cut_image(self):
        # A PNG cut by --max-output is not served as image/png with isError false, in a tool call
        # and in a resource read; an uncut one still is.
        png = self.script("png.py", """\
            import sys
            sys.stdout.buffer.write(b"\\x89PNG\\r\\n\\x1a\\n" + bytes(range(256)) * int(sys.argv[1]))
            """)
        with McpProcess("--max-output", "1000", "--name", "png", PY, png, "{n}") as server:
            server.initialize()
            result = server.call("png", {"n": "20"})
            self.assertTrue(result["isError"], result)
            self.assertEqual([c["type"] for c in result["content"]], ["text", "text"], result)
            self.assertIn("The output (image/png) was cut at 1000 bytes", text_of(result))
            whole = server.call("png", {"n": "2"})
            self.assertFalse(whole["isError"])
            self.assertEqual(whole["content"][0]["mimeType"], "image/png")
        config = os.path.join(self.dir, "c.json")
        with open(config, "w") as f:
            json.dump({"resources": [{"uri": "png://{n}", "name": "png", "command": "%s %s {n}" % (PY, png)}]}, f)
        with McpProcess("--max-output", "1000", "serve", "--config", config) as server:
            server.initialize()
            reply = server.request("resources/read", {"uri": "png://20"})
            self.assertIn("was cut at 1000 bytes", reply["error"]["message"], reply)
            reply = server.request("resources/read", {"uri": "png://2"})
            self.assertEqual(reply["result"]["contents"][0]["mimeType"], "image/png", reply)

    def test_cut_binary_table(self):
        # Text (even with a character split by the cut) is not "cut binary"; bytes that are not UTF-8 are.
        rows = [(b"hello", 0, None), (b"hello", 5, None), ("h\u00e9".encode()[:2], 1, None),
                (b"\x89PNG\r\n\x1a\n\xff", 0, None), (b"\x89PNG\r\n\x1a\n\xff", 9, "image/png"),
                (b"\xff\xfe\xfd\xfc\xfb", 3, "binary data")]
        for data, cut, kind in rows:
            with self.subTest(data=data, cut=cut):
                sentence = mcpstudio.cut_binary(data, cut)
                self.assertEqual(sentence and sentence.split("(")[1].split(")")[0], kind)
                block = mcpstudio.output_content(data, "x://y", cut)
                self.assertEqual(block["type"] == "text" and block["text"] == sentence, kind is not None)

    def test_long_stderr_line_linear(self):
        # A 32 MB stderr line without a newline, in 64 KiB pieces, is gathered in linear time and
        # handed on cut to the output limit.
        import asyncio

        async def feed():
            lines = []
            child = mcpstudio._ChildProtocol(1 << 20, lines.append)
            chunk = b"x" * (1 << 16)
            started = time.monotonic()
            for _ in range(512):
                child.pipe_data_received(2, chunk)
            child.pipe_data_received(2, b"\nnext\n")
            return time.monotonic() - started, lines
        seconds, lines = asyncio.run(feed())
        self.assertEqual([len(line) for line in lines], [1 << 20, 4])
        self.assertLess(seconds, 1.0)


class PaginateTests(unittest.TestCase):
    def test_pages_and_bad_cursor(self):
        # Walking the cursors visits every item once; a made-up cursor is -32602.
        items = list(range(250))
        seen, cursor = [], None
        while True:
            page, cursor = mcpstudio.paginate(items, cursor, 100)
            seen.extend(page)
            if cursor is None:
                break
        self.assertEqual(seen, items)
        for bad in ("nope", "o999", 7, "o-1"):
            with self.assertRaises(mcpstudio.McpError) as cm:
                mcpstudio.paginate(items, bad, 100)
            self.assertEqual(cm.exception.code, -32602)


# --------------------------------------------------------------------------
# The protocol, through the real program
# --------------------------------------------------------------------------

class ProtocolTests(ScratchDir):
    def test_echo_end_to_end(self):
        # The README's main job: a client sees `echo` with a required string and gets the output.
        with McpProcess("echo", "{message}") as server:
            init = server.initialize()["result"]
            self.assertEqual(init["protocolVersion"], "2025-11-25")
            self.assertEqual(init["serverInfo"]["name"], "mcpstudio")
            self.assertEqual(init["serverInfo"]["version"], mcpstudio.__version__)
            self.assertIn("title", init["serverInfo"])
            self.assertEqual(init["capabilities"], {"tools": {"listChanged": False}, "logging": {}, "tasks": {
            "list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}, "resources": {"listChanged": False}})
            tools = server.request("tools/list")["result"]["tools"]
            self.assertEqual(len(tools), 1)
            self.assertEqual(tools[0]["name"], "echo")
            self.assertEqual(tools[0]["inputSchema"]["required"], ["message"])
            self.assertEqual(tools[0]["inputSchema"]["properties"]["message"]["type"], "string")
            result = server.call("echo", {"message": "hello world"})
            self.assertEqual(result, {"content": [{"type": "text", "text": "hello world\n"}], "isError": False})
            self.assertEqual(server.close(), 0, server.context())

    def test_protocol_versions(self):
        # Each supported version is echoed; an unknown one gets the latest, never an error.
        with McpProcess("echo", "{message}") as server:
            for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
                reply = server.request("initialize", {"protocolVersion": version, "capabilities": {}})
                self.assertEqual(reply["result"]["protocolVersion"], version)
            reply = server.request("initialize", {"protocolVersion": "1999-01-01", "capabilities": {}})
            self.assertEqual(reply["result"]["protocolVersion"], "2025-11-25")

    def test_unknown_methods_answer_at_once(self):
        # A malformed server/discover and any unknown method are answered at once, before and
        # after initialize; ping works; id 0 is a real id.
        with McpProcess("echo", "{message}") as server:
            server.request("ping", request_id="up")  # started (a slow machine may take seconds to import)
            started = time.monotonic()
            reply = server.request("server/discover", {}, request_id=0)
            self.assertLess(time.monotonic() - started, 1.5)
            self.assertEqual(reply["error"]["code"], -32602)
            self.assertEqual(server.request("nothing/here")["error"]["code"], -32601)
            server.initialize()
            self.assertEqual(server.request("prompts/list")["error"]["code"], -32601)
            self.assertEqual(server.request("ping", request_id="p")["result"], {})

    def test_protocol_2026_07_28(self):
        # The modern era beside the handshake era, in one process: per-request _meta, discovery,
        # complete results with cache hints, per-request log levels, removed methods, bad versions.
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
        info = {"io.modelcontextprotocol/serverInfo": {"name": "mcpstudio", "title": "mcpstudio: echo",
                                                       "version": mcpstudio.__version__}}
        with McpProcess("echo", "{message}") as server:
            found = server.request("server/discover", {"_meta": meta})["result"]
            self.assertEqual(found["supportedVersions"][0], "2026-07-28")
            self.assertIn("2025-11-25", found["supportedVersions"])
            self.assertEqual(found["capabilities"]["tools"], {"listChanged": False})
            self.assertEqual((found["resultType"], found["cacheScope"], found["_meta"]), ("complete", "public", info))
            self.assertIsInstance(found["ttlMs"], int)
            listed = server.request("tools/list", {"_meta": meta})["result"]
            self.assertEqual([t["name"] for t in listed["tools"]], ["echo"])
            self.assertEqual((listed["resultType"], listed["cacheScope"]), ("complete", "public"))
            called = server.request("tools/call", {"name": "echo", "arguments": {"message": "quiet"}, "_meta": meta})
            self.assertEqual(called["result"]["content"][0]["text"], "quiet\n")
            self.assertEqual(called["result"]["resultType"], "complete")
            self.assertNotIn("ttlMs", called["result"])
            self.assertEqual(server.notifications_of("notifications/message"), [])  # no level asked: no logs
            loud = dict(meta, **{"io.modelcontextprotocol/logLevel": "debug"})
            server.request("tools/call", {"name": "echo", "arguments": {"message": "loud"}, "_meta": loud})
            self.assertTrue(server.notifications_of("notifications/message"))
            for method in ("ping", "logging/setLevel", "initialize"):
                error = server.request(method, {"_meta": meta})["error"]
                self.assertEqual(error["code"], -32601, method)
                self.assertIn("not part of protocol 2026-07-28", error["message"])
            error = server.request("tools/list", {"_meta": dict(meta, **{
                "io.modelcontextprotocol/protocolVersion": "2099-01-01"})})["error"]
            self.assertEqual(error, {"code": -32022, "message": "Unsupported protocol version",
                                     "data": {"supported": ["2026-07-28"], "requested": "2099-01-01"}})
            error = server.request("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}})
            self.assertEqual(error["error"]["code"], -32602)
            bad_level = dict(meta, **{"io.modelcontextprotocol/logLevel": "loud"})
            self.assertEqual(server.request("tools/list", {"_meta": bad_level})["error"]["code"], -32602)
            # The handshake era still works in the same process, with its own rules.
            self.assertEqual(server.initialize()["result"]["protocolVersion"], "2025-11-25")
            plain = server.request("tools/list")["result"]
            self.assertNotIn("resultType", plain)
            self.assertEqual(server.request("ping")["result"], {})

    def test_bad_json_and_invalid_requests(self):
        # Garbage gets -32700 with id null and the loop goes on; malformed requests get -32600/-32602.
        with McpProcess("echo", "{message}") as server:
            server.send_raw(b"this is not json\n")
            server.send_raw(b"[" * 100000 + b"\n")  # too deep to parse: still -32700, no crash
            server.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": \n')
            server.send({"jsonrpc": "2.0", "id": 2, "method": 5})
            server.send({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": [1]})
            server.send({"jsonrpc": "2.0", "id": None, "method": "ping"})
            self.assertEqual(server.wait_response(2)["error"]["code"], -32600)
            self.assertEqual(server.wait_response(3)["error"]["code"], -32602)
            self.assertEqual(server.request("ping")["result"], {})
            with server.lock:
                null_errors = [json.loads(line)["error"]["code"] for line in server.stdout_lines
                               if json.loads(line).get("id", 0) is None]
            self.assertEqual(sorted(null_errors), [-32700, -32700, -32700, -32600])
            # A wrong `jsonrpc`, a message with only an id, a duplicate id in flight.
            server.send({"jsonrpc": "1.0", "id": 4, "method": "ping"})
            self.assertEqual(server.wait_response(4)["error"]["code"], -32600)
            server.send({"jsonrpc": "2.0", "id": 5})
            self.assertEqual(server.wait_response(5)["error"]["code"], -32600)
            server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}})
            self.assertEqual(server.request("initialize", {"protocolVersion": "2025-11-25", "clientInfo": "x"})
                             ["result"]["protocolVersion"], "2025-11-25")

    def test_framing_tolerance(self):
        # \r\n line endings and blank lines are accepted; a multi-megabyte message is read whole.
        with McpProcess("echo", "{message}") as server:
            server.send_raw(b'\n\r\n{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n\n')
            self.assertEqual(server.wait_response(1)["result"], {})
            big = {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": {"pad": "x" * (8 << 20)}}}
            server.send(big)
            self.assertEqual(server.wait_response(2)["result"], {})

    def test_oversized_messages_are_skipped(self):
        # A line or a Content-Length body over the limit is answered -32700 and thrown away
        # without being kept in memory; the next message is served.
        code = ("import mcpstudio, sys; mcpstudio.MAX_MESSAGE = 1000; "
                "sys.exit(mcpstudio.main(['echo', '{message}']))")
        with McpProcess(cmd=[PY, "-c", code], cwd=HERE) as server:
            server.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 5000 + b'"}}\n')
            server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
            self.assertEqual(server.wait_response(2)["result"], {})
            self.assertIn("larger than 1000 bytes", server.wait_response(None)["error"]["message"])
            self.assertNotIn(1, server.responses)
        with McpProcess(cmd=[PY, "-c", code], cwd=HERE) as server:
            body = b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"' + b"y" * 5000 + b'"}}'
            small = b'{"jsonrpc":"2.0","id":4,"method":"ping"}'
            for message in (body, small):
                server.send_raw(b"Content-Length: %d\r\n\r\n%s" % (len(message), message))
            self.assertEqual(server.close(), 0)
            time.sleep(0.1)
            raw = b"".join(server.stdout_lines)
            self.assertIn(b"larger than 1000 bytes", raw)
            self.assertIn(b'{"jsonrpc":"2.0","id":4,"result":{}}', raw)
            self.assertNotIn(b'"id":3', raw)

    def test_content_length_framing(self):
        # A peer that frames with Content-Length headers is answered in the same framing.
        with McpProcess("echo", "{message}") as server:
            body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                               "params": {"name": "echo", "arguments": {"message": "framed é"}}}).encode()
            server.send_raw(b"Content-Length: %d\r\nContent-Type: application/json\r\n\r\n%s" % (len(body), body))
            server.proc.stdin.close()
            self.assertEqual(server.proc.wait(WAIT), 0)
            time.sleep(0.1)
            raw = b"".join(server.stdout_lines)
            self.assertTrue(raw.startswith(b"Content-Length: "), raw[:200])
            header, _, payload = raw.partition(b"\r\n\r\n")
            self.assertEqual(int(header.split(b":")[1]), len(payload))
            reply = json.loads(payload)
            self.assertEqual(reply["id"], 7)
            self.assertEqual(text_of(reply["result"]), "framed é\n")

    def test_batch(self):
        # A batch array is answered with an array of responses (notifications get none).
        with McpProcess("echo", "{message}") as server:
            server.send([
                {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "b"}}},
                {"jsonrpc": "2.0", "id": 3, "method": "nope"},
            ])
            self.assertTrue(wait_until(lambda: any(isinstance(k, tuple) for k in server.responses)), server.context())
            batch = next(v for k, v in server.responses.items() if isinstance(k, tuple))
            self.assertEqual(sorted(r["id"] for r in batch), [1, 2, 3])
            by_id = {r["id"]: r for r in batch}
            self.assertEqual(text_of(by_id[2]["result"]), "b\n")
            self.assertEqual(by_id[3]["error"]["code"], -32601)
            server.send([])
            self.assertEqual(server.wait_response(None)["error"]["code"], -32600)

    def test_unknown_tool_and_bad_params(self):
        # An unknown tool or malformed call is a JSON-RPC error -32602 naming the problem.
        with McpProcess("echo", "{message}") as server:
            server.initialize()
            reply = server.request("tools/call", {"name": "nope", "arguments": {}})
            self.assertEqual(reply["error"]["code"], -32602)
            self.assertIn("nope", reply["error"]["message"])
            self.assertIn("echo", reply["error"]["message"])
            self.assertEqual(server.request("tools/call", {"arguments": {}})["error"]["code"], -32602)
            self.assertEqual(server.request("tools/call", {"name": "echo", "arguments": [1]})["error"]["code"], -32602)
            self.assertEqual(server.request("tools/list", {"cursor": "bogus"})["error"]["code"], -32602)

    def test_argument_validation(self):
        # Missing, wrong-typed and unknown arguments are isError results naming the argument
        # and listing the valid ones; nothing runs.
        with McpProcess("echo", "{message}", "[--loud]", "[tags...]") as server:
            server.initialize()
            cases = [
                ({}, ["`message` is required"]),
                ({"message": ["a"]}, ["`message`", "string", "array"]),
                ({"message": "x", "colour": "red"}, ["`colour`", "not a known argument"]),
                ({"message": "x", "loud": "yes"}, ["`loud`", "boolean"]),
                ({"message": "x", "tags": "a"}, ["`tags`", "array"]),
            ]
            for args, fragments in cases:
                with self.subTest(args=args):
                    result = server.call("echo", args)
                    self.assertTrue(result["isError"])
                    for fragment in fragments + ["message (string, required)", "loud (boolean)", "tags (array)"]:
                        self.assertIn(fragment, text_of(result))
            ok = server.call("echo", {"message": "x", "loud": True, "tags": ["a", "b"]})
            self.assertEqual(text_of(ok), "x --loud a b\n")
            # Numbers sent for string fields (the Inspector and models do) become their text.
            self.assertEqual(text_of(server.call("echo", {"message": 5, "tags": [1.5, "b"]})), "5 1.5 b\n")

    def test_option_injection_guard(self):
        # git log {path} with path="--output=/etc/x" is refused and nothing runs.
        marker = os.path.join(self.dir, "ran")
        tool = self.script("record.py", """\
            import sys
            open(%r, "w").write(repr(sys.argv[1:]))
            print("ran")
            """ % marker)
        with McpProcess("--name", "rec", PY, tool, "{path}") as server:
            server.initialize()
            result = server.call("rec", {"path": "--output=/etc/x"})
            self.assertTrue(result["isError"])
            self.assertIn("starts with '-'", text_of(result))
            self.assertFalse(os.path.exists(marker))
            self.assertFalse(server.call("rec", {"path": "-5"})["isError"])
        with McpProcess("--allow-dash-values", "--name", "rec", PY, tool, "{path}") as server:
            server.initialize()
            self.assertEqual(text_of(server.call("rec", {"path": "--x"})), "ran\n")

    def test_values_stay_literal(self):
        # Shell syntax in values is passed as one literal argument: no shell ever runs.
        tool = self.script("args.py", "import json, sys; print(json.dumps(sys.argv[1:]))\n")
        nasty = "a; rm -rf / $(id) `id` 'q' \"d\" | cat > x\nnewline *"
        with McpProcess("--name", "args", PY, tool, "{v}", "pre-{v}") as server:
            server.initialize()
            result = server.call("args", {"v": nasty})
            self.assertEqual(json.loads(text_of(result)), [nasty, "pre-" + nasty])

    def test_exit_codes_and_stderr(self):
        # A non-zero exit is isError with the exit code AND the output; stderr is labelled.
        tool = self.script("fail.py", """\
            import sys
            print("some output")
            print("some problem", file=sys.stderr)
            sys.exit(int(sys.argv[1]))
            """)
        with McpProcess("--name", "fail", PY, tool, "{code}") as server:
            server.initialize()
            result = server.call("fail", {"code": "3"})
            self.assertTrue(result["isError"])
            text = text_of(result)
            self.assertIn("exited with code 3", text)
            self.assertIn("some output", text)
            self.assertIn("[stderr]\nsome problem", text)
            ok = server.call("fail", {"code": "0"})
            self.assertFalse(ok["isError"])
            self.assertEqual([c["text"] for c in ok["content"]], ["some output\n", "[stderr]\nsome problem\n"])

    def test_start_failures_and_signals(self):
        # Command not found, permission denied and death by signal each say so.
        not_exec = self.script("plain.sh", "echo hi\n", executable=False)
        with McpProcess("/no/such/command-xyz", "{x}") as server:
            server.initialize()
            result = server.call("command_xyz", {"x": "1"})
            self.assertTrue(result["isError"])
            self.assertIn("not found", text_of(result))
        with McpProcess("--name", "t", not_exec, "[x]") as server:
            server.initialize()
            result = server.call("t", {})
            self.assertTrue(result["isError"])
            self.assertIn("Permission denied", text_of(result))
        with McpProcess("--name", "t", "sh", "-c", "kill -9 $$", "[x]") as server:
            server.initialize()
            result = server.call("t", {})
            self.assertTrue(result["isError"])
            self.assertIn("SIGKILL", text_of(result))

    def test_timeout(self):
        # --timeout stops the process group and says the call timed out.
        sleeper = self.pid_sleeper()
        pids = os.path.join(self.dir, "pids")
        with McpProcess("--timeout", "3", "--name", "s", PY, sleeper, "{out}") as server:  # 3: two Pythons start
            server.initialize()
            started = time.monotonic()
            result = server.call("s", {"out": pids})
            self.assertLess(time.monotonic() - started, 3 + mcpstudio.KILL_GRACE + 2)
            self.assertTrue(result["isError"])
            self.assertIn("timed out after 3 s", text_of(result))
            for pid in self.read_pids(pids):
                self.assertTrue(wait_until(lambda pid=pid: not alive(pid), 5), "pid %d outlived the timeout" % pid)

    def test_cancellation(self):
        # notifications/cancelled kills the command's process group and sends no response.
        sleeper = self.pid_sleeper()
        pids = os.path.join(self.dir, "pids")
        with McpProcess("--name", "s", PY, sleeper, "{out}") as server:
            server.initialize()
            server.send({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
                         "params": {"name": "s", "arguments": {"out": pids}}})
            child, grandchild = self.read_pids(pids)
            server.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 42, "reason": "user pressed stop"}})
            self.assertTrue(wait_until(lambda: not alive(child) and not alive(grandchild), 5),
                            "alive: child %s, grandchild %s; stderr: %s" % (alive(child), alive(grandchild),
                                                                           "".join(server.stderr)[-2000:]))
            self.assertEqual(server.request("ping")["result"], {})  # still serving
            time.sleep(0.2)
            self.assertNotIn(42, server.responses)
            # Cancelling an unknown id is ignored.
            server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}})
            self.assertEqual(server.request("ping")["result"], {})

    def test_a_cancel_while_the_pipes_connect_stops_the_group(self):
        # The process exists before asyncio has connected its pipes; a cancel in between used to
        # make asyncio kill that process alone, leaving what it had started running (a flake of
        # test_cancellation under load, 3 runs in 48). In-process: the loop's pipe connection is
        # held until the grandchild exists and the cancel has landed, which opens that window.
        sleeper = self.pid_sleeper()

        async def scenario(start_server):
            loop = asyncio.get_running_loop()
            held, connect = asyncio.Event(), loop.connect_read_pipe

            async def connect_read_pipe(*args, **kwargs):
                await held.wait()
                return await connect(*args, **kwargs)
            loop.connect_read_pipe = connect_read_pipe
            runner = mcpstudio.ProcessRunner(mcpstudio.Log())
            runner.grace = 0.5
            pids = os.path.join(self.dir, "pids-%s" % start_server)
            if start_server:
                task = asyncio.ensure_future(runner.start_server([PY, sleeper, pids], asyncio.SubprocessProtocol))
            else:
                task = asyncio.ensure_future(runner.run([PY, sleeper, pids]))
            deadline = time.monotonic() + WAIT
            while not os.path.exists(pids) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            child, grandchild = self.read_pids(pids)
            task.cancel()
            await asyncio.sleep(0.1)
            held.set()
            await asyncio.wait([task], timeout=WAIT)
            self.assertTrue(task.cancelled())
            gone = await loop.run_in_executor(None, wait_until, lambda: not alive(child) and not alive(grandchild), WAIT)
            await runner.stop_all()
            runner.close_watchdog()
            return gone, alive(child), alive(grandchild)
        for start_server in (False, True):
            with self.subTest(start_server=start_server):
                gone, child, grandchild = asyncio.run(scenario(start_server))
                self.assertTrue(gone, "alive: child %s, grandchild %s" % (child, grandchild))

    def test_progress(self):
        # With a progressToken, a running command sends increasing progress notifications.
        with McpProcess("--name", "s", "sleep", "{seconds}") as server:
            server.initialize()
            result = server.call("s", {"seconds": "1.5"}, meta={"progressToken": "tok-1"})
            self.assertFalse(result["isError"])
            progress = [n["params"] for n in server.notifications_of("notifications/progress")]
            self.assertGreaterEqual(len(progress), 2, progress)
            self.assertTrue(all(p["progressToken"] == "tok-1" for p in progress))
            values = [p["progress"] for p in progress]
            self.assertEqual(values, sorted(set(values)))
            # Without a token there is none.
            server.call("s", {"seconds": "1.1"})
            self.assertEqual(len(server.notifications_of("notifications/progress")), len(progress))

    def test_logging_set_level(self):
        # logging/setLevel debug makes calls send notifications/message; a bad level is -32602.
        with McpProcess("echo", "{message}") as server:
            server.initialize()
            server.call("echo", {"message": "quiet"})
            self.assertEqual(server.notifications_of("notifications/message"), [])
            self.assertEqual(server.request("logging/setLevel", {"level": "debug"})["result"], {})
            server.call("echo", {"message": "loud"})
            logs = [n["params"] for n in server.notifications_of("notifications/message")]
            self.assertTrue(any("running: echo loud" in line["data"] and line["level"] == "debug" for line in logs), logs)
            self.assertEqual(server.request("logging/setLevel", {"level": "chatty"})["error"]["code"], -32602)

    def test_concurrent_calls(self):
        # 16 calls of a 0.4 s command finish together, not one after another (6.4 s); half that leaves
        # room for a loaded machine's spawns.
        with McpProcess("--name", "s", "sleep", "{seconds}") as server:
            server.initialize()
            started = time.monotonic()
            for i in range(16):
                server.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                             "params": {"name": "s", "arguments": {"seconds": "0.4"}}})
            for i in range(16):
                self.assertFalse(server.wait_response(i)["result"]["isError"])
            self.assertLess(time.monotonic() - started, 3.2)

    def test_max_concurrency(self):
        # --max-concurrency 2: the others wait their turn (8 x 0.3 s in 4 rounds).
        with McpProcess("--max-concurrency", "2", "--name", "s", "sleep", "{seconds}") as server:
            server.initialize()
            started = time.monotonic()
            for i in range(8):
                server.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                             "params": {"name": "s", "arguments": {"seconds": "0.3"}}})
            for i in range(8):
                self.assertFalse(server.wait_response(i)["result"]["isError"])
            elapsed = time.monotonic() - started
            self.assertGreaterEqual(elapsed, 1.15)
            self.assertLess(elapsed, 2.2)  # 2 at a time, not 1

    def test_large_output_no_deadlock(self):
        # 4 MB on stdout and on stderr at once: both pipes are read while the command runs.
        tool = self.script("big.py", """\
            import sys
            sys.stderr.write("e" * 4000000)
            sys.stdout.write("o" * 4000000)
            """)
        with McpProcess("--max-output", "10000000", "--name", "big", PY, tool, "[x]") as server:
            server.initialize()
            result = server.call("big", {}, timeout=30)
            self.assertFalse(result["isError"])
            kept = [server.request("resources/read", {"uri": c["uri"]})["result"]["contents"][0]["text"]
                    for c in result["content"] if c["type"] == "resource_link"]
            self.assertEqual(kept, ["e" * 4000000, "o" * 4000000])

    def test_max_output(self):
        # --max-output keeps the first bytes and says how much was cut; a cut through a
        # multi-byte character still gives text, not a blob.
        with McpProcess("--max-output", "100", "--name", "s", PY, "-c", "print('x' * 1000)", "[y]") as server:
            server.initialize()
            result = server.call("s", {})
            self.assertEqual(result["content"][0]["text"], "x" * 100)
            self.assertIn("901 more bytes", text_of(result))
        with McpProcess("--max-output", "100", "--name", "s", PY, "-c", "print('x' + 'é' * 1000)", "[y]") as server:
            server.initialize()
            result = server.call("s", {})
            self.assertEqual(result["content"][0], {"type": "text", "text": "x" + "é" * 49})

    def test_unrunnable_arguments(self):
        # A NUL byte in a value cannot reach argv: an isError result, not an internal error.
        with McpProcess("echo", "{message}") as server:
            server.initialize()
            result = server.call("echo", {"message": "a\u0000b"})
            self.assertTrue(result["isError"])
            self.assertIn("word 1 of the command line holds a NUL character", text_of(result))

    def test_missing_interpreter(self):
        # A script whose #! interpreter is missing is not reported as "not on PATH".
        tool = self.script("orphan", "#!/no/such/interpreter\necho hi\n")
        with McpProcess("--name", "t", tool, "[x]") as server:
            server.initialize()
            result = server.call("t", {})
            self.assertIn("#!", text_of(result))
            self.assertNotIn("PATH", text_of(result))

    def test_grandchild_holding_pipes(self):
        # The call ends when the command exits, even if a background child holds stdout;
        # what it left running in its process group is stopped.
        pidfile = os.path.join(self.dir, "bg")
        with McpProcess("--name", "bg", "sh", "-c", 'sleep 30 & echo $! > "$0"; echo done', "{f}") as server:
            server.initialize()
            started = time.monotonic()
            result = server.call("bg", {"f": pidfile})
            self.assertLess(time.monotonic() - started, 3)
            self.assertEqual(text_of(result), "done\n")
            with open(pidfile) as f:
                pid = int(f.read())
            self.assertTrue(wait_until(lambda: not alive(pid), 5), "background sleep survived")

    def test_binary_output(self):
        # A PNG comes back as image content; other non-UTF-8 bytes as an embedded blob.
        png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
        tool = self.script("bin.py", """\
            import sys
            data = {"png": %r, "raw": b"\\xff\\xfe\\x00binary"}[sys.argv[1]]
            sys.stdout.buffer.write(data)
            """ % png)
        with McpProcess("--name", "bin", PY, tool, "{kind}") as server:
            server.initialize()
            import base64
            image = server.call("bin", {"kind": "png"})["content"][0]
            self.assertEqual(image["type"], "image")
            self.assertEqual(image["mimeType"], "image/png")
            self.assertEqual(base64.b64decode(image["data"]), png)
            blob = server.call("bin", {"kind": "raw"})["content"][0]
            self.assertEqual(blob["type"], "resource")
            self.assertEqual(base64.b64decode(blob["resource"]["blob"]), b"\xff\xfe\x00binary")

    def test_env_and_cwd(self):
        # --env adds variables over the inherited environment; --cwd sets the folder.
        with McpProcess("--env", "GREETING=hi there", "--cwd", self.dir, "--name", "t",
                        PY, "-c", "import os; print(os.environ['GREETING'], os.environ.get('HOME') is not None, os.getcwd())",
                        "[x]") as server:
            server.initialize()
            self.assertEqual(text_of(server.call("t", {})), "hi there True %s\n" % os.path.realpath(self.dir))

    def test_child_stdin_is_null(self):
        # A command that reads stdin sees EOF at once, never the protocol stream.
        with McpProcess("--name", "cat", "cat", "[x]") as server:
            server.initialize()
            result = server.call("cat", {}, timeout=5)
            self.assertFalse(result["isError"])
            self.assertEqual(text_of(result), "(no output)")

    def test_stdout_is_only_protocol(self):
        # While serving, fd 1 points at stderr: a stray print or os.write(1) cannot reach the client.
        code = ("import os, mcpstudio; fd = mcpstudio._claim_stdout(); print('stray print'); "
                "os.write(1, b'raw write\\n'); os.write(fd, b'{}\\n')")
        proc = subprocess.run([PY, "-c", code], cwd=HERE, capture_output=True, timeout=WAIT)
        self.assertEqual(proc.stdout, b"{}\n")
        self.assertIn(b"stray print", proc.stderr)
        self.assertIn(b"raw write", proc.stderr)
        # And the real server with --debug writes only JSON lines to stdout.
        with McpProcess("--debug", "echo", "{message}") as server:
            server.initialize()
            server.call("echo", {"message": "x"})
            server.close()
            for line in server.stdout_lines:
                json.loads(line)
            self.assertTrue(any("debug" in line for line in server.stderr))

    def test_log_file_masks_secrets(self):
        # --log records every protocol message in and out; --env values are masked, also
        # non-ASCII ones and ones JSON escapes; values under 4 characters are left alone.
        log = os.path.join(self.dir, "wire.log")
        with McpProcess("--log", log, "--env", "TOKEN=s3cr3t-value", "--env", "DB_PASSWORD=pässwörd\"x",
                        "--env", "ONE=1", "--env", "ROOT=/srv/shared-folder", "--name", "t", PY, "-c",
                        "import os; print(os.environ['TOKEN'], os.environ['DB_PASSWORD'], os.environ['ROOT'])",
                        "[x]") as server:
            server.initialize()
            self.assertEqual(text_of(server.call("t", {})), 's3cr3t-value pässwörd"x /srv/shared-folder\n')
            self.assertEqual(server.close(), 0)
        with open(log, encoding="utf-8") as f:
            content = f.read()
        self.assertIn('"method":"initialize"', content.replace(" ", ""))
        self.assertIn("tools/call", content)
        self.assertIn("<-", content)
        for leak in ("s3cr3t-value", "pässwörd", "p\\u00e4ss"):
            self.assertNotIn(leak, content)
        self.assertIn("*** *** /srv/shared-folder", content)  # secrets masked, a folder (ROOT) kept
        self.assertIn("2025-11-25", content)  # ONE=1 did not mangle the log

    def test_log_file_masks_secret_arguments_and_answers(self):
        # Issue 41.18: a `"secret": true` value was in clear in --log's wire lines (the call in, the debug line
        # out) and so was a secret the user typed into a form: masked by the tool's schema and the form's.
        log = os.path.join(self.dir, "wire.log")
        path = os.path.join(self.dir, "secret.json")
        with open(path, "w") as f:
            json.dump({"tools": [{"name": "use", "command": "%s -c pass {code} {pin}" % PY, "parameters": {
                "code": {"type": "string", "secret": True},
                "pin": {"type": "string", "secret": True, "ask": "Your PIN"}}}]}, f)
        with McpProcess("--log", log, "serve", "--config", path) as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                          "clientInfo": {"name": "t", "version": "0"}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            server.request("logging/setLevel", {"level": "debug"})
            server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                         "params": {"name": "use", "arguments": {"code": "c0de-7355608"}}})
            self.assertTrue(wait_until(lambda: server.notifications_of("elicitation/create")), server.context())
            asked = server.notifications_of("elicitation/create")[0]
            server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"pin": "pin-31337"}}})
            self.assertFalse(server.wait_response(7)["result"]["isError"])
            debug = [n["params"]["data"] for n in server.notifications_of("notifications/message")
                     if "running:" in str(n["params"].get("data"))]
            self.assertEqual(server.close(), 0)
        self.assertTrue(debug and "7355608" not in debug[0] and "31337" not in debug[0], debug)
        with open(log, encoding="utf-8") as f:
            content = f.read()
        self.assertIn('"code": "***"', content)
        self.assertIn('"pin": "***"', content)
        self.assertNotIn("7355608", content)
        self.assertNotIn("31337", content)

    def test_log_file_masks_a_2026_answer(self):
        # Issue 41.18: a 2026-07-28 retry brings a secret parameter the user was asked for in `inputResponses`.
        log = os.path.join(self.dir, "wire.log")
        path = os.path.join(self.dir, "secret.json")
        with open(path, "w") as f:
            json.dump({"tools": [{"name": "use", "command": "%s -c pass {pin}" % PY, "parameters": {
                "pin": {"type": "string", "secret": True, "ask": "Your PIN"}}}]}, f)
        with HttpServerProcess("--log", log, "serve", "--config", path) as server:
            meta = dict(MODERN_META, **{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
            params = {"name": "use", "arguments": {}, "_meta": meta}
            first = server.messages(server.modern("tools/call", params)[2])[-1]["result"]
            self.assertEqual(list(first["inputRequests"]), ["arguments"])
            done = server.messages(server.modern("tools/call", dict(params, inputResponses={"arguments": {
                "action": "accept", "content": {"pin": "pin-31337"}}}))[2])[-1]["result"]
            self.assertFalse(done["isError"], done)
        with open(log, encoding="utf-8") as f:
            content = f.read()
        self.assertIn('"pin": "***"', content)
        self.assertNotIn("31337", content)

    def test_failing_log_never_stops_the_server(self):
        # stderr closed under --debug, or a --log file that cannot be written (disk full):
        # the server still answers and exits on EOF.
        read_end, write_end = os.pipe()
        os.close(read_end)  # every write to the server's stderr fails with EPIPE
        with McpProcess("--debug", "echo", "{message}", stderr=write_end) as server:
            os.close(write_end)
            server.initialize()
            self.assertEqual(text_of(server.call("echo", {"message": "still here"})), "still here\n")
            self.assertEqual(server.close(), 0)
        if os.path.exists("/dev/full"):
            with McpProcess("--log", "/dev/full", "echo", "{message}") as server:
                server.initialize()
                self.assertEqual(text_of(server.call("echo", {"message": "x"})), "x\n")
                self.assertEqual(server.close(), 0)


class LifecycleTests(ScratchDir):
    def _start_sleeping_call(self, server, pids):
        server.initialize()
        server.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                     "params": {"name": "s", "arguments": {"out": pids}}})
        return self.read_pids(pids)

    def test_eof_stops_children(self):
        # Closing stdin stops every child and grandchild and exits 0 promptly.
        sleeper, pids = self.pid_sleeper(), os.path.join(self.dir, "pids")
        with McpProcess("--name", "s", PY, sleeper, "{out}") as server:
            procs = self._start_sleeping_call(server, pids)
            started = time.monotonic()
            self.assertEqual(server.close(), 0, server.context())
            self.assertLess(time.monotonic() - started, mcpstudio.EOF_DRAIN + mcpstudio.KILL_GRACE + 2)
            for pid in procs:
                self.assertTrue(wait_until(lambda pid=pid: not alive(pid), 5), "pid %d outlived the server" % pid)

    def test_eof_lets_quick_calls_finish(self):
        # Requests piped in before EOF are still answered (e.g. `printf ... | mcpstudio`).
        msgs = [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "piped"}}},
        ]
        proc = subprocess.run([PY, MODULE, "echo", "{message}"], input="".join(json.dumps(m) + "\n" for m in msgs),
                              capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        replies = {json.loads(line)["id"]: json.loads(line) for line in proc.stdout.splitlines()}
        self.assertEqual(text_of(replies[1]["result"]), "piped\n")

    def test_stubborn_children_after_double_cancel(self):
        # Children that ignore SIGTERM die by SIGKILL even when a second cancel, or a
        # SIGTERM to the server, arrives while the first stop is still in its grace period.
        sleeper = self.stubborn_sleeper()
        for ending in ("cancel-twice-then-eof", "cancel-then-sigterm"):
            with self.subTest(ending=ending):
                pids = os.path.join(self.dir, "pids-" + ending)
                with McpProcess("--name", "s", PY, sleeper, "{out}") as server:
                    procs = self._start_sleeping_call(server, pids)
                    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
                    server.send(cancel)
                    time.sleep(0.3)
                    if ending == "cancel-twice-then-eof":
                        server.send(cancel)
                        self.assertEqual(server.close(), 0)
                    else:
                        server.proc.send_signal(signal.SIGTERM)
                        self.assertEqual(server.proc.wait(WAIT), 0)
                    for pid in procs:
                        self.assertTrue(wait_until(lambda pid=pid: not alive(pid), 5), "pid %d outlived the server" % pid)

    def test_leftovers_of_finished_commands(self):
        # A command that exits leaving a SIGTERM-ignoring child (not holding our pipes) has
        # that child stopped, even when the server exits right after the call.
        sleeper = self.stubborn_sleeper()
        pids = os.path.join(self.dir, "pids")
        with McpProcess("--name", "s", PY, sleeper, "{out}", "[leave]") as server:
            server.initialize()
            result = server.call("s", {"out": pids, "leave": "1"})
            self.assertFalse(result["isError"], result)
            child, grandchild = self.read_pids(pids)
            self.assertEqual(server.close(), 0)
            self.assertTrue(wait_until(lambda: not alive(grandchild), 5), "leftover outlived the server")
        pids2 = os.path.join(self.dir, "pids2")
        with McpProcess("--name", "s", PY, sleeper, "{out}", "[leave]") as server:
            server.initialize()
            server.call("s", {"out": pids2, "leave": "1"})
            child, grandchild = self.read_pids(pids2)
            # While the server keeps running, the leftover gets SIGKILL after the grace period.
            self.assertTrue(wait_until(lambda: not alive(grandchild), mcpstudio.KILL_GRACE + 3))
            self.assertEqual(server.request("ping")["result"], {})

    def test_no_progress_after_cancel(self):
        # Once a call is cancelled, no more progress is sent for it, even while its
        # stubborn process takes the grace period to die.
        sleeper = self.stubborn_sleeper()
        pids = os.path.join(self.dir, "pids")
        with McpProcess("--name", "s", PY, sleeper, "{out}") as server:
            server.initialize()
            server.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                         "params": {"name": "s", "arguments": {"out": pids}, "_meta": {"progressToken": "p"}}})
            self.read_pids(pids)
            server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}})
            time.sleep(0.1)
            before = len(server.notifications_of("notifications/progress"))
            self.assertGreaterEqual(before, 1)
            time.sleep(mcpstudio.KILL_GRACE + 0.5)
            self.assertEqual(len(server.notifications_of("notifications/progress")), before)
            self.assertNotIn(9, server.responses)

    def test_signals_stop_children(self):
        # SIGTERM, SIGINT and SIGHUP stop every child and exit 0.
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with self.subTest(signal=signum):
                sleeper, pids = self.pid_sleeper(), os.path.join(self.dir, "pids-%d" % signum)
                with McpProcess("--name", "s", PY, sleeper, "{out}") as server:
                    procs = self._start_sleeping_call(server, pids)
                    server.proc.send_signal(signum)
                    self.assertEqual(server.proc.wait(WAIT), 0, server.context())
                    for pid in procs:
                        self.assertTrue(wait_until(lambda pid=pid: not alive(pid), 5), "pid %d outlived the server" % pid)


class CommandLineTests(ScratchDir):
    def run_cli(self, *args):
        return subprocess.run(SERVER + list(args), capture_output=True, text=True, timeout=WAIT, stdin=subprocess.DEVNULL)

    def test_help_and_version(self):
        # --help lists every option; --version prints the version.
        proc = self.run_cli("--help")
        self.assertEqual(proc.returncode, 0)
        for option in mcpstudio.OPTIONS:
            for name in option.names:
                self.assertIn(name, proc.stdout)
        proc = self.run_cli("--version")
        self.assertEqual(proc.stdout.strip(), "mcpstudio %s" % mcpstudio.__version__)

    def test_usage_errors(self):
        # Unknown options, missing values and a missing command exit 2 with a clear message on stderr.
        for args, fragment in ((["--bogus", "echo"], "unknown option --bogus"),
                               (["--timeot", "5", "echo"], "did you mean --timeout"),
                               (["--timeout"], "--timeout needs a value"),
                               (["--timeout", "soon", "echo"], "positive number"),
                               (["--timeout", "nan", "echo"], "positive number"),
                               (["--max-name-length", "10", "echo"], "at least 16"),
                               ([], "no command given"),
                               (["--env", "NOEQUALS", "echo"], "KEY=VALUE"),
                               (["--cwd", "/no/such/dir", "echo"], "no such folder"),
                               (["echo", "{x}", "{x...}"], "bad template")):
            with self.subTest(args=args):
                proc = self.run_cli(*args)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertIn(fragment, proc.stderr)
                self.assertTrue(proc.stderr.startswith("mcpstudio: error:"))
                self.assertEqual(proc.stdout, "")

    def _tool(self, *args):
        with McpProcess(*args) as server:
            server.initialize()
            return server, server.request("tools/list")["result"]["tools"][0]

    def test_options_stop_at_the_command(self):
        # Options after the command belong to it: `echo -n {text}` passes -n to echo.
        with McpProcess("--stdio", "echo", "-n", "{text}") as server:
            server.initialize()
            self.assertEqual(text_of(server.call("echo", {"text": "no newline"})), "no newline")
        # `--` reaches a command that starts with a dash or is named like an option.
        with McpProcess("--name", "t", "--", PY, "-c", "print('after --')", "[x]") as server:
            server.initialize()
            self.assertEqual(text_of(server.call("t", {})), "after --\n")

    def test_tool_metadata_options(self):
        # --name, --description and the annotation flags shape the Tool; names are made safe.
        _, tool = self._tool("--name", "my.tool/v2", "--description", "Says things.", "--read-only",
                             "--idempotent", "--open-world", "--destructive", "echo", "{message}")
        self.assertEqual(tool["name"], "my_tool_v2")
        self.assertEqual(tool["description"], "Says things.")
        self.assertEqual(tool["annotations"], {"readOnlyHint": True, "idempotentHint": True,
                                               "openWorldHint": True, "destructiveHint": True})
        _, tool = self._tool("git-status", "[--short]")
        self.assertEqual(tool["name"], "git-status")  # one naming rule in every mode: dashes are kept
        self.assertEqual(tool["description"], "Run `git-status [--short]`.")
        _, tool = self._tool("--max-name-length", "16", "--name", "a_very_long_tool_name", "echo")
        self.assertEqual(len(tool["name"]), 16)
        self.assertRegex(tool["name"], r"^a_very_lo_[0-9a-f]{6}$")

    def test_zipapp(self):
        # The copy-and-zip recipe (before `mcpstudio zipapp`) still builds a .pyz that serves the echo tool.
        build = os.path.join(self.dir, "build")
        os.mkdir(build)
        shutil.copy(MODULE, os.path.join(build, "__main__.py"))
        pyz = os.path.join(self.dir, "mcpstudio.pyz")
        subprocess.run([PY, "-m", "zipapp", build, "-p", "/usr/bin/env python3", "-o", pyz],
                       check=True, timeout=WAIT)
        with McpProcess(cmd=[PY, pyz, "echo", "{message}"]) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("echo", {"message": "zipped"})), "zipped\n")
            self.assertEqual(server.close(), 0)


class ScriptSchemaTests(unittest.TestCase):
    def test_translation_table(self):
        # Each mcpd option becomes the documented JSON schema property.
        rows = [
            ({"required": True, "value_type": "string"}, {"type": "string"}),
            ({"required": True, "value_type": "integer", "size": {"min": 1, "max": 100}},
             {"type": "integer", "minimum": 1, "maximum": 100}),
            ({"required": True, "value_type": "float"}, {"type": "number"}),
            ({"required": False, "value_type": "boolean", "default_value": False}, {"type": "boolean", "default": False}),
            ({"required": True, "value_type": "any"}, {}),
            ({"required": True}, {}),
            ({"required": True, "value_type": {"enum": ["a", "b"]}}, {"type": "string", "enum": ["a", "b"]}),
            ({"required": True, "value_type": {"enum": [1, 2]}}, {"enum": [1, 2]}),
            ({"required": True, "value_type": "string", "size": {"min": 2, "max": 5}, "description": "d"},
             {"type": "string", "minLength": 2, "maxLength": 5, "description": "d"}),
            ({"required": False, "type": "integer", "default": 3}, {"type": "integer", "default": 3}),
        ]
        for spec, prop in rows:
            with self.subTest(spec=spec):
                schema, defaults = mcpstudio.script_schema({"x": spec})
                self.assertEqual(schema["properties"]["x"], prop)
                self.assertEqual(schema.get("required", []), ["x"] if spec["required"] else [])
                if not spec["required"]:
                    self.assertEqual(defaults, {"x": prop["default"]})

    def test_inconsistent_options(self):
        # Each inconsistency is a ValueError that names the option and the problem.
        rows = [
            ({"x": {"required": False, "value_type": "string"}}, "no default_value"),
            ({"x": {"required": False, "value_type": "integer", "default_value": "one"}}, "integer"),
            ({"x": {"required": True, "value_type": {"enum": []}}}, "non-empty"),
            ({"x": {"value_type": "string"}}, "`required` must be true or false"),
            ({"x": {"required": True, "value_type": "date"}}, "unknown value_type"),
            ({"x": "string"}, "must be an object"),
            ([1], "JSON object"),
        ]
        for options, fragment in rows:
            with self.subTest(options=options):
                with self.assertRaises(ValueError) as cm:
                    mcpstudio.script_schema(options)
                self.assertIn(fragment, str(cm.exception))
                if isinstance(options, dict):
                    self.assertIn("`x`", str(cm.exception))


class ScriptModeTests(ScratchDir):
    def setUp(self):
        super().setUp()
        self.root = os.path.join(self.dir, "scripts")
        os.mkdir(self.root)
        self.help_log = os.path.join(self.dir, "help-runs.log")
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))

    def make(self, rel, meta=None, options=None, body="print('ok')", help_exit=0, help_sleep=0,
             stdout=None, stderr=None, executable=True):
        """Write a Python script that answers --help as told and logs each --help run."""
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        out = json.dumps(meta or {}) if stdout is None else stdout
        err = (json.dumps(options) if options is not None else "") if stderr is None else stderr
        with open(path, "w") as f:
            f.write("#!%s\nimport json, os, sys, time\n" % PY)
            f.write("if sys.argv[1:] == ['--help']:\n")
            f.write("    open(%r, 'a').write(%r + '\\n')\n" % (self.help_log, rel))
            f.write("    time.sleep(%r)\n    sys.stdout.write(%r)\n    sys.stderr.write(%r)\n    sys.exit(%d)\n"
                    % (help_sleep, out, err, help_exit))
            f.write(textwrap.dedent(body) + "\n")
        os.chmod(path, 0o755 if executable else 0o644)
        return path

    def helps(self):
        if not os.path.exists(self.help_log):
            return []
        with open(self.help_log) as f:
            return f.read().split()

    def serve(self, *extra):
        return McpProcess("--root-directory", self.root, "--help-timeout", "2", *extra, env=self.env)

    def tool_names(self, server):
        return [t["name"] for t in server.request("tools/list")["result"]["tools"]]

    def test_discovery(self):
        # Good, nested, broken, slow, invalid and inconsistent scripts; hidden and
        # non-executable files are never run; each bad one gets one warning naming it.
        self.make("good", {"title": "Good one", "description": "works"})
        self.make("math/add", {}, {"a": {"required": True, "value_type": "float"}})
        self.make("deep/er/tool", {})
        self.make("broken", help_exit=1, stderr="boom")
        self.make("slow", help_sleep=5)
        self.make("badjson", stdout="{not json")
        self.make("badopts", stderr="[1, 2")
        self.make("nodefault", {}, {"x": {"required": False, "value_type": "string"}})
        self.make("wrongdefault", {}, {"x": {"required": False, "value_type": "integer", "default_value": "a"}})
        self.make("emptyenum", {}, {"x": {"required": True, "value_type": {"enum": []}}})
        self.make("plain", executable=False)
        self.make(".hidden")
        self.make(".secret/tool")
        with open(os.path.join(self.root, "notes.txt"), "w") as f:
            f.write("not a script")
        with self.serve() as server:
            started = time.monotonic()
            server.initialize()
            self.assertLess(time.monotonic() - started, 4, "initialize waited for discovery (`slow` takes 5 s)")
            names = self.tool_names(server)
            self.assertEqual(names, ["deep__er__tool", "good", "math__add"])
            tools = {t["name"]: t for t in server.request("tools/list")["result"]["tools"]}
            self.assertEqual(tools["good"]["title"], "Good one (good)")
            self.assertEqual(tools["good"]["description"], "works")
            self.assertEqual(tools["math__add"]["title"], "math/add")
            stderr_text = server.stderr_when(lambda text: text.count(" left out") >= 7)
            for name, fragment in (("broken", "exited with code 1"), ("slow", "timed out"),
                                   ("badjson", "invalid metadata"), ("badopts", "invalid options"),
                                   ("nodefault", "no default_value"), ("wrongdefault", "integer"),
                                   ("emptyenum", "non-empty")):
                lines = [line for line in server.stderr if os.path.join(self.root, name) + " left out" in line]
                self.assertEqual(len(lines), 1, "%s: %s" % (name, stderr_text))
                self.assertIn(fragment, lines[0])
            warnings = [n["params"] for n in server.notifications_of("notifications/message")]
            self.assertEqual(len([w for w in warnings if w["level"] == "warning"]), 7, warnings)
        self.assertNotIn("plain", self.helps())
        self.assertFalse(any("hidden" in h or "secret" in h for h in self.helps()))

    def test_include_exclude_and_separator(self):
        # --include/--exclude narrow what is run with --help; --separator joins path parts.
        self.make("math/add", {})
        self.make("math/sub", {})
        self.make("other", {})
        with self.serve("--include", "math/*", "--exclude", "*/sub", "--separator", "-") as server:
            server.initialize()
            self.assertEqual(self.tool_names(server), ["math-add"])
        self.assertEqual(self.helps(), ["math/add"])
        proc = subprocess.run(SERVER + ["--root-directory", self.root, "--separator", "."],
                              capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--separator", proc.stderr)

    def test_long_names_and_collisions(self):
        # Names stay within the limit and distinct: a/b.sh and a/b.py both want a__b, so
        # both get a hash of their path and neither owns the plain name.
        self.make("a/b.sh", {})
        self.make("a/b.py", {})
        self.make("x" * 30 + "/" + "y" * 30, {})
        with self.serve("--max-name-length", "40") as server:
            server.initialize()
            names = self.tool_names(server)
            self.assertEqual(len(set(names)), 3)
            self.assertTrue(all(len(n) <= 40 and re.match(r"^[A-Za-z0-9_-]+$", n) for n in names), names)
            self.assertEqual(len([n for n in names if re.match(r"^a__b_[0-9a-f]{6}$", n)]), 2, names)

    def test_a_name_never_moves_to_another_script(self):
        # a.py is served as `a`; adding a.sh must not make `a` run a.sh: `a` goes, both get hashed names.
        self.make("a.py", {}, body="print('from a.py')")
        with self.serve("--rescan", "0") as server:
            server.initialize()
            self.assertEqual(self.tool_names(server), ["a"])
            self.make("a.sh", {}, body="print('from a.sh')")
            names = self.tool_names(server)
            self.assertNotIn("a", names)
            self.assertEqual(len(names), 2)
            self.assertEqual(server.request("tools/call", {"name": "a", "arguments": {}})["error"]["code"], -32602)
            texts = sorted(text_of(server.call(n, {})) for n in names)
            self.assertEqual(texts, ["from a.py\n", "from a.sh\n"])

    def test_input_by_stdin_and_env_with_defaults(self):
        # Options arrive as one JSON object on stdin and as MCPD_OPT_ variables; defaults applied.
        self.make("echo", {}, {
            "text": {"required": True, "value_type": "string"},
            "n": {"required": False, "value_type": "integer", "default_value": 3},
            "on": {"required": False, "value_type": "boolean", "default_value": False},
            "ratio": {"required": True, "value_type": "float"},
            "blob": {"required": False, "value_type": "any", "default_value": {"k": [1]}},
        }, body="""
            data = json.load(sys.stdin)
            env = {k: v for k, v in os.environ.items() if k.startswith("MCPD_OPT_")}
            print(json.dumps({"stdin": data, "env": env}))
            """)
        with self.serve() as server:
            server.initialize()
            result = server.call("echo", {"text": "a b", "ratio": 0.5, "on": True})
            self.assertFalse(result["isError"], result)
            data = result["structuredContent"]
            self.assertEqual(data["stdin"], {"text": "a b", "n": 3, "on": True, "ratio": 0.5, "blob": {"k": [1]}})
            self.assertEqual(data["env"], {"MCPD_OPT_text": "a b", "MCPD_OPT_n": "3", "MCPD_OPT_on": "true",
                                           "MCPD_OPT_ratio": "0.5", "MCPD_OPT_blob": '{"k": [1]}'})
            self.assertEqual(json.loads(result["content"][0]["text"]), data)
            bad = server.call("echo", {"text": "x", "ratio": "half"})
            self.assertTrue(bad["isError"])
            self.assertIn("`ratio`", text_of(bad))
            missing = server.call("echo", {"ratio": 1})
            self.assertIn("`text` is required", text_of(missing))

    def test_option_names_with_dashes(self):
        # An option named max-count arrives as MCPD_OPT_max-count and MCPD_OPT_max_count, and
        # may be called as max_count.
        self.make("dash", {}, {"max-count": {"required": True, "value_type": "integer"}}, body="""
            print(os.environ["MCPD_OPT_max-count"], os.environ["MCPD_OPT_max_count"], json.load(sys.stdin))
            """)
        with self.serve() as server:
            server.initialize()
            self.assertEqual(text_of(server.call("dash", {"max_count": 3})), "3 3 {'max-count': 3}\n")

    def test_text_output_has_no_structured_content(self):
        # Plain text (or a JSON array) on stdout is text content only.
        self.make("words", {}, body="print('just words')")
        self.make("arr", {}, body="print('[1, 2]')")
        with self.serve() as server:
            server.initialize()
            self.assertEqual(server.call("words", {}), {"content": [{"type": "text", "text": "just words\n"}], "isError": False})
            self.assertNotIn("structuredContent", server.call("arr", {}))

    def test_log_levels_forwarded(self):
        # stderr lines with level prefixes become notifications/message at the matching level.
        self.make("chatty", {}, body="""
            for line in ["TRACE t", "DEBUG d", "INFO i", "WARNING w", "WARN w2", "ERROR e", "plain line"]:
                print(line, file=sys.stderr)
            print("done")
            """)
        with self.serve() as server:
            server.initialize()
            server.request("logging/setLevel", {"level": "debug"})
            result = server.call("chatty", {})
            # Log lines become notifications; other stderr lines stay in the result, labelled.
            self.assertEqual([c["text"] for c in result["content"]], ["done\n", "[stderr]\nplain line"])
            logs = [(n["params"]["level"], n["params"]["data"]) for n in server.notifications_of("notifications/message")
                    if n["params"].get("logger") == "chatty"]
            self.assertIn(("info", "done"), logs)  # stdout lines too, as they come (OutputFeed), from another pipe
            logs.remove(("info", "done"))
            self.assertEqual(logs, [("debug", "t"), ("debug", "d"), ("info", "i"), ("warning", "w"),
                                    ("warning", "w2"), ("error", "e")])

    def test_exit_codes(self):
        # Every code of the spec's table gives isError with its meaning, the code, stdout and ERROR lines.
        self.make("fail", {}, {"code": {"required": True, "value_type": "integer"}}, body="""
            code = json.load(sys.stdin)["code"]
            print("partial output")
            print("ERROR went wrong %d" % code, file=sys.stderr)
            print("INFO not an error", file=sys.stderr)
            sys.exit(code)
            """)
        meanings = {1: "internal error", 2: "bad request", 3: "forbidden", 4: "not found", 5: "service unavailable",
                    6: "not acceptable", 7: "not implemented", 8: "conflict", 9: "timeout",
                    42: "does not define"}
        with self.serve() as server:
            server.initialize()
            for code, meaning in meanings.items():
                with self.subTest(code=code):
                    result = server.call("fail", {"code": code})
                    self.assertTrue(result["isError"])
                    text = text_of(result)
                    self.assertIn("exit code %d" % code, text)
                    self.assertIn(meaning, text)
                    self.assertIn("partial output", text)
                    self.assertIn("ERROR went wrong %d" % code, text)
                    self.assertNotIn("not an error", text)
        self.make("killed", {}, body="import signal; os.kill(os.getpid(), signal.SIGKILL)")
        with self.serve() as server:
            server.initialize()
            self.assertIn("killed by signal SIGKILL", text_of(server.call("killed", {})))

    def test_large_output(self):
        # 1 MB on stdout and stderr: read while the script runs (mcpd deadlocks at 64 KiB).
        self.make("big", {}, body="""
            sys.stderr.write("x" * 1000000)
            sys.stdout.write("y" * 1000000)
            """)
        with self.serve("--max-output", "2000000") as server:
            server.initialize()
            result = server.call("big", {}, timeout=30)
            self.assertEqual(result["content"][-1]["size"], 1000000)

    def test_state_resources(self):
        # "state": true gives mcpd://<path>/state; --state output is JSON as is, text as a JSON string;
        # a failing --state is a JSON-RPC error saying why; an unknown URI is -32002.
        for rel, out, code in (("counter", '{"count": 7}', 0), ("sub/texty", "hello", 0), ("bad", "", 3)):
            self.make(rel, {"state": True}, body="""
                if sys.argv[1:] == ["--state"]:
                    sys.stdout.write(%r)
                    print("ERROR state unavailable", file=sys.stderr) if %d else None
                    sys.exit(%d)
                print("called")
                """ % (out, code, code))
        self.make("stateless", {})
        with self.serve() as server:
            init = server.initialize()["result"]
            self.assertEqual(init["capabilities"]["resources"], {"listChanged": True})
            uris = sorted(r["uri"] for r in server.request("resources/list")["result"]["resources"])
            self.assertEqual(uris, ["mcpd://bad/state", "mcpd://counter/state", "mcpd://sub/texty/state"])
            read = server.request("resources/read", {"uri": "mcpd://counter/state"})["result"]["contents"][0]
            self.assertEqual((read["mimeType"], json.loads(read["text"])), ("application/json", {"count": 7}))
            read = server.request("resources/read", {"uri": "mcpd://sub/texty/state"})["result"]["contents"][0]
            self.assertEqual(json.loads(read["text"]), "hello")
            error = server.request("resources/read", {"uri": "mcpd://bad/state"})["error"]
            self.assertIn("exited with code 3", error["message"])
            self.assertIn("state unavailable", error["message"])
            self.assertEqual(server.request("resources/read", {"uri": "mcpd://nope/state"})["error"]["code"], -32002)
            self.assertEqual(server.request("resources/templates/list")["result"], {"resourceTemplates": []})

    def test_list_changed(self):
        # Adding, changing and removing a script sends tools/list_changed (and resources/list_changed).
        self.make("first", {})
        with self.serve("--rescan", "0.2") as server:
            server.initialize()
            self.assertEqual(self.tool_names(server), ["first"])
            self.make("second", {"state": True})

            def changes():
                return len(server.notifications_of("notifications/tools/list_changed"))

            def resource_changes():
                return len(server.notifications_of("notifications/resources/list_changed"))
            # two lines: the reader may have taken the first and not yet the second
            self.assertTrue(wait_until(lambda: changes() >= 1 and resource_changes() >= 1, 5), server.context())
            self.assertEqual(resource_changes(), 1)
            self.assertEqual(self.tool_names(server), ["first", "second"])
            os.remove(os.path.join(self.root, "first"))
            self.assertTrue(wait_until(lambda: changes() >= 2, 5))
            self.assertEqual(self.tool_names(server), ["second"])
            time.sleep(0.6)
            self.assertEqual(changes(), 2, "list_changed sent with nothing changed")

    def test_subscriptions_listen(self):
        # 2026-07-28 clients learn of list changes through subscriptions/listen, tagged with its id.
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
        self.make("first", {})
        with self.serve("--rescan", "0.2") as server:
            server.send({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen", "params": {
                "_meta": meta, "notifications": {"toolsListChanged": True, "promptsListChanged": True}}})
            self.assertTrue(wait_until(lambda: server.notifications_of("notifications/subscriptions/acknowledged")))
            ack = server.notifications_of("notifications/subscriptions/acknowledged")[0]["params"]
            self.assertEqual(ack, {"_meta": {"io.modelcontextprotocol/subscriptionId": "sub"},
                                   "notifications": {"toolsListChanged": True}})  # no prompts here
            self.make("second", {})
            self.assertTrue(wait_until(lambda: server.notifications_of("notifications/tools/list_changed"), 10))
            change = server.notifications_of("notifications/tools/list_changed")[0]["params"]
            self.assertEqual(change, {"_meta": {"io.modelcontextprotocol/subscriptionId": "sub"}})
            self.assertEqual(server.notifications_of("notifications/resources/list_changed"), [])  # not asked for
            server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "sub"}})
            time.sleep(0.3)
            self.assertNotIn("sub", server.responses)
            self.make("third", {})
            time.sleep(0.8)
            self.assertEqual(len(server.notifications_of("notifications/tools/list_changed")), 1)  # it ended

    def test_tools_list_sees_new_scripts_at_once(self):
        # Even without the background rescan, tools/list notices an added script.
        self.make("first", {})
        with self.serve("--rescan", "0") as server:
            server.initialize()
            self.assertEqual(self.tool_names(server), ["first"])
            self.make("second", {})
            self.assertEqual(self.tool_names(server), ["first", "second"])

    def test_discovery_cache(self):
        # A restart with unchanged scripts runs no --help at all; a changed script is asked again.
        self.make("one", {})
        self.make("two", {})
        self.make("broken", help_exit=1)
        with self.serve() as server:
            server.initialize()
            self.assertEqual(self.tool_names(server), ["one", "two"])
        self.assertEqual(sorted(self.helps()), ["broken", "one", "two"])
        with self.serve() as server:
            server.initialize()
            self.assertEqual(self.tool_names(server), ["one", "two"])
            self.assertIn("left out", server.stderr_when(lambda text: "left out" in text))
        self.assertEqual(len(self.helps()), 3, "a restart re-ran --help")
        time.sleep(0.01)
        self.make("two", {"description": "changed"})
        with self.serve() as server:
            server.initialize()
            tools = {t["name"]: t for t in server.request("tools/list")["result"]["tools"]}
            self.assertEqual(tools["two"]["description"], "changed")
        self.assertEqual(sorted(self.helps()), ["broken", "one", "two", "two"])

    def test_timeouts_are_not_cached_across_restarts(self):
        # A --help that timed out is asked again after a restart (it may have been a slow moment).
        path = os.path.join(self.root, "slow")  # a shell script: it logs at once, however loaded the machine
        with open(path, "w") as f:
            f.write("#!/bin/sh\nif [ \"$1\" = --help ]; then echo slow >>'%s'; sleep 1.5; echo '{}'; exit 0; fi\n"
                    "echo ok\n" % self.help_log)
        os.chmod(path, 0o755)
        with self.serve("--help-timeout", "0.5") as server:
            server.initialize()
            self.assertEqual(self.tool_names(server), [])
            self.assertTrue(wait_until(lambda: self.helps() == ["slow"]))  # asked (and timed out) before the restart
        with self.serve("--help-timeout", "5") as server:
            server.initialize()
            self.assertEqual(self.tool_names(server), ["slow"])
        self.assertEqual(self.helps(), ["slow", "slow"])

    def test_corrupt_cache_is_ignored(self):
        # A cache file of the wrong shape (even valid JSON) is ignored, then rewritten.
        self.make("one", {})
        with self.serve() as server:
            server.initialize()
            self.tool_names(server)
        cache_dir = os.path.join(self.dir, "cache", "mcpstudio")
        (cache,) = os.listdir(cache_dir)
        for bad in ('{"format": 1, "root": %s, "scripts": []}', '{"format": 1, "root": %s, "scripts": {"x": {"size": 1}}}',
                    "not json"):
            with self.subTest(cache=bad):
                with open(os.path.join(cache_dir, cache), "w") as f:
                    f.write(bad % json.dumps(os.path.realpath(self.root)) if "%s" in bad else bad)
                with self.serve() as server:
                    server.initialize()
                    self.assertEqual(self.tool_names(server), ["one"])

    def test_odd_names_and_options(self):
        # A state URI is percent-encoded; bad `size` values and option names leave one script out, not all.
        self.make("my script", {"state": True}, body="""
            if sys.argv[1:] == ["--state"]:
                print('{"ok": true}')
                sys.exit(0)
            """)
        self.make("badsize", {}, {"s": {"required": False, "value_type": "string", "default_value": "", "size": {"min": "1"}}})
        self.make("badname", {}, {"a=b": {"required": True}})
        with self.serve() as server:
            server.initialize()
            self.assertEqual(self.tool_names(server), ["my script".replace(" ", "_")])
            (resource,) = server.request("resources/list")["result"]["resources"]
            self.assertEqual(resource["uri"], "mcpd://my%20script/state")
            read = server.request("resources/read", {"uri": resource["uri"]})["result"]["contents"][0]
            self.assertEqual(json.loads(read["text"]), {"ok": True})
            stderr = server.stderr_when(lambda text: "badsize left out" in text and "badname left out" in text)
            self.assertIn("badsize left out", stderr)
            self.assertIn("badname left out", stderr)

    def test_missing_root(self):
        # A root that does not exist is a usage error naming it.
        proc = subprocess.run(SERVER + ["--root-directory", os.path.join(self.dir, "nope")],
                              capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("nope: no such folder", proc.stderr)

    def test_examples(self):
        # examples/scripts: every script is served and behaves as its README says.
        state = os.path.join(self.dir, "counter.json")
        env = dict(self.env, MCPSTUDIO_COUNTER_FILE=state)
        with McpProcess("--root-directory", os.path.join(HERE, "examples", "scripts"), env=env) as server:
            server.initialize()
            self.assertEqual(self.tool_names(server), ["counter", "files__read", "greet", "math__calc", "transform"])
            self.assertEqual(text_of(server.call("greet", {"name": "Ada", "excited": True})), "Hello, Ada!\n")
            self.assertEqual(server.call("math__calc", {"operation": "multiply", "a": 6, "b": 7})["structuredContent"],
                             {"operation": "multiply", "result": 42.0})
            self.assertIn("exit code 2", text_of(server.call("math__calc", {"operation": "divide", "a": 1, "b": 0})))
            self.assertEqual(server.call("transform", {"text": "ab", "repeat": 2})["structuredContent"], {"result": "AB AB"})
            self.assertEqual(server.call("counter", {"increment": 5})["structuredContent"]["count"], 5)
            read = server.request("resources/read", {"uri": "mcpd://counter/state"})["result"]["contents"][0]
            self.assertEqual(json.loads(read["text"]), {"count": 5})
            self.assertIn("exit code 4", text_of(server.call("files__read", {"path": "/no/such/file"})))


class CommandTemplateTests(unittest.TestCase):
    """The config file's template engine: shell quoting and {#if} blocks, no shell."""

    def render(self, text, args, kinds=None):
        template = mcpstudio.CommandTemplate(text)
        for field in template.occurrences():
            if kinds and field.key in kinds:
                field.kind = kinds[field.key]
        return template.render(args)

    def test_table(self):
        # Each row: template, arguments, argv.
        rows = [
            ("git commit -m '{message}'{#if amend} --amend{/if}", {"message": "fix bug", "amend": True},
             ["git", "commit", "-m", "fix bug", "--amend"]),
            ("git commit -m '{message}'{#if amend} --amend{/if}", {"message": "x", "amend": False},
             ["git", "commit", "-m", "x"]),
            ("ls {#if all}-a{#else}-1{/if}", {}, ["ls", "-1"]),
            ("ls {#if all}-a{#else}-1{/if}", {"all": True}, ["ls", "-a"]),
            ("x {#if a}A{#if b} B{/if}{/if}", {"a": 1, "b": 1}, ["x", "A", "B"]),
            ("x {#if a}A{#if b} B{/if}{/if}", {"b": 1}, ["x"]),
            ("x {#if n}-n {n}{/if}", {"n": 0}, ["x", "-n", "0"]),          # 0 counts as present
            ("x {#if s}yes{/if}", {"s": ""}, ["x"]),                        # "" does not
            ("x {#if l}yes{/if}", {"l": []}, ["x"]),                        # nor []
            ("x {#if l}yes{/if}", {"l": None}, ["x"]),                      # nor null
            ('echo "a  b" \'c d\' e\\ f', {}, ["echo", "a  b", "c d", "e f"]),
            ("echo '' \"\"", {}, ["echo", "", ""]),
            ('echo "say \\"hi\\"" \'it\'"\'"\'s\'', {}, ["echo", 'say "hi"', "it's"]),
            ("echo --limit={limit} end", {}, ["echo", "end"]),           # missing: the word goes
            ("echo -n {limit}", {"limit": 5}, ["echo", "-n", "5"]),
            ("echo {v}", {"v": "{other}"}, ["echo", "{other}"]),         # never re-substituted
            ("echo {v} {other}", {"v": "{other}", "other": "x"}, ["echo", "{other}", "x"]),
            ("echo {path # a file}", {"path": "p"}, ["echo", "p"]),
            ("echo [--flag] [opt]", {"flag": True}, ["echo", "--flag"]),
            ("echo '{a b}' {\"k\": 1} '{\"k\": 1}'", {}, ["echo", "{a b}", "{k:", "1}", '{"k": 1}']),  # shell quoting
            ("echo {#if x}one two{/if}three", {"x": True}, ["echo", "one", "twothree"]),
            ("echo {flag}", {"flag": True}, ["echo", "true"]),
        ]
        for text, args, argv in rows:
            with self.subTest(template=text, args=args):
                self.assertEqual(self.render(text, args), argv)

    def test_arrays(self):
        # An array alone in a word is one argument per item; inside a word, joined with commas.
        self.assertEqual(self.render("rm -- {files}", {"files": ["a b", "c"]}, {"files": "array"}),
                         ["rm", "--", "a b", "c"])
        self.assertEqual(self.render("x --tags={t}", {"t": ["a", "b"]}, {"t": "array"}), ["x", "--tags=a,b"])
        self.assertEqual(self.render("x {files}", {"files": []}, {"files": "array"}), ["x"])

    def test_errors(self):
        # Malformed templates are TemplateErrors that say what is wrong.
        for text, fragment in (("x {#if a}", "never closed"), ("x {/if}", "no {#if}"),
                               ("x {#if a}{#else}{#else}{/if}", "second {#else}"),
                               ("x 'open", "never closed"), ("x {#if}", "malformed block"),
                               ("", "no command")):
            with self.subTest(template=text):
                with self.assertRaises(TemplateError) as cm:
                    mcpstudio.CommandTemplate(text)
                self.assertIn(fragment, str(cm.exception))

    def test_shell_tools_keep_the_template_s_quoting(self):
        # Escapes, pipes in quotes and missing values render in sh -c exactly as in argv mode:
        # a value is always one quoted positional parameter, never split, globbed or run.
        rows = [
            (r"""printf '[%s]' "say \"{msg}\"" """, {"msg": "x -n *"}, '[say "x -n *"]'),
            (r"echo a \| {x}", {"x": "id"}, "a | id\n"),
            (r'echo "\$HOME {x}"', {"x": "v"}, "$HOME v\n"),
            ("echo --limit={limit} end", {}, "end\n"),
            ("echo '{a}' b", {}, "b\n"),
            ("printf '%s,' {#if a}'yes {a}'{#else}no{/if}", {"a": "$(id)"}, "yes $(id),"),
        ]
        for text, args, output in rows:
            with self.subTest(template=text):
                script, values = mcpstudio.CommandTemplate(text).render_shell(args)
                out = subprocess.run(["sh", "-c", script, "mcpstudio"] + values, capture_output=True, text=True,
                                     timeout=WAIT, cwd=tempfile.gettempdir())
                self.assertEqual(out.stdout, output, script)

    def test_what_a_shell_template_may_not_do(self):
        # The command word is literal and outside blocks; quotes close in the block part they
        # opened in; fields inside $( ) or backticks are recorded (shell tools refuse them).
        for text in ("{#if a}echo{/if} {c}", "{x} y", "echo {#if a}\"{/if}{x}{#if a}\"{/if}", "x $(echo {y}"):
            with self.subTest(template=text):
                with self.assertRaises(TemplateError):
                    mcpstudio.CommandTemplate(text)
        self.assertEqual(mcpstudio.CommandTemplate('ls "$(dirname {p})" `echo {q}` {r}').substituted, ["p", "q"])
        with self.assertRaises(TemplateError):
            Template(["{cmd}", "x"])  # template mode: a value never chooses the command

    def test_no_field_inside_interpreter_code(self):
        # sh -c '...{v}...', python3 -c, node -e: a value there would be code. Refused at parse time
        # in both template and config syntax; the positional form (sh -c '"$1"' sh {v}) is fine.
        for words in (["sh", "-c", "echo {v}"], ["bash", "-lc", "echo [v]"], ["python3", "-c", "print({v})"],
                      ["/usr/bin/python3.11", "-c", "x{v}"], ["node", "-e", "f({v})"], ["perl", "-e", "{v}"]):
            with self.subTest(words=words):
                with self.assertRaises(TemplateError) as cm:
                    Template(words)
                self.assertIn("could run any command", str(cm.exception))
        with self.assertRaises(TemplateError):
            mcpstudio.CommandTemplate("sh -c 'echo {v} | wc -c'")
        Template(["sh", "-c", 'echo "$1"', "sh", "{v}"])
        mcpstudio.CommandTemplate("""sh -c 'echo "$1" | wc -c' sh {v}""")

    def test_brackets_in_quotes_and_stdin_are_text(self):
        # Quoted text and JSON keep their brackets: only {field} is a field inside quotes and in stdin.
        self.assertEqual(self.render("echo '.items[{i}]'", {"i": "2"}), ["echo", ".items[2]"])
        stdin = mcpstudio.CommandTemplate('{"items": [1, {x}]}', text=True)
        self.assertEqual(stdin.render_text({"x": "5"}), '{"items": [1, 5]}')

    def test_shell_rendering_keeps_values_out_of_the_script(self):
        # "shell": true passes every value positionally; the script holds only template text.
        template = mcpstudio.CommandTemplate("printf '%s|' '{a}' \"{b}\" {c} | tr a-z A-Z")
        script, values = template.render_shell({"a": "x'y", "b": "$(id)", "c": "`id`; rm -rf /"})
        self.assertNotIn("id", script)
        self.assertEqual(values, ["x'y", "$(id)", "`id`; rm -rf /"])
        out = subprocess.run(["sh", "-c", script, "mcpstudio"] + values, capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(out.stdout, "X'Y|$(ID)|`ID`; RM -RF /|")


class OptionInjectionTests(ScratchDir):
    """Issue 14.1: a value that starts an argv word may not start with '-', quoted or not."""

    def test_quoted_fields_are_guarded_too(self):
        # sort "{f}", sort '{f}', ""{f} and a shell: true `sort "{f}" | cat` all refuse
        # f="--output=FILE" (sort would write FILE); after a literal `--` the value is data.
        target = os.path.join(self.dir, "written")
        forms = ['sort "{f}"', "sort '{f}'", 'sort ""{f}', "sort ''{f}"]
        tools = [{"name": "t%d" % i, "parameters": {"f": {"type": "string"}}, "command_template": form}
                 for i, form in enumerate(forms)]
        tools.append({"name": "piped", "shell": True, "parameters": {"f": {"type": "string"}},
                      "command_template": 'sort "{f}" | cat'})
        tools.append({"name": "after_dashes", "parameters": {"f": {"type": "string"}},
                      "command_template": 'ls -d -- "{f}"'})
        tools.append({"name": "allowed", "allow_dash_values": True, "parameters": {"f": {"type": "string"}},
                      "command_template": 'ls -d "{f}"'})
        tools.append({"name": "shell_after_dashes", "shell": True, "parameters": {"f": {"type": "string"}},
                      "command_template": 'ls -d -- "{f}" 2>&1 | cat'})
        tools.append({"name": "shell_next_command", "shell": True, "parameters": {"f": {"type": "string"}},
                      "command_template": 'echo -- | sort "{f}"'})
        path = os.path.join(self.dir, "tools.json")
        with open(path, "w") as f:
            json.dump({"tools": tools, "resources": [
                {"uri": "sorted://{f}", "command": 'sort "{f}"'}]}, f)
        with McpProcess("serve", "--config", path, cwd=self.dir) as server:
            server.initialize()
            for tool in [t["name"] for t in tools[:-4]] + ["shell_next_command"]:
                with self.subTest(tool=tool):
                    result = server.call(tool, {"f": "--output=written"})
                    self.assertTrue(result["isError"], text_of(result))
                    self.assertIn("starts with '-'", text_of(result))
            error = server.request("resources/read", {"uri": "sorted://--output=written"})["error"]
            self.assertIn("starts with '-'", error["message"])
            self.assertFalse(os.path.exists(target))
            # After `--` a dash value is a file name (ls says it does not exist), not an option.
            result = server.call("after_dashes", {"f": "--nope"})
            self.assertIn("--nope", text_of(result))
            self.assertNotIn("starts with '-'", text_of(result))
            # A tool that allows dash values passes them on as written.
            self.assertNotIn("starts with '-'", text_of(server.call("allowed", {"f": "-a"})))
            # In a shell script, `--` frees the rest of its own command only (the next one was refused above).
            result = text_of(server.call("shell_after_dashes", {"f": "--nope"}))
            self.assertIn("--nope", result)
            self.assertNotIn("starts with '-'", result)

    def test_render_table(self):
        # Pure rendering: which word a value leads decides; a value inside a word is data.
        rows = [
            ('x "{f}"', True), ("x '{f}'", True), ('x ""{f}', True), ("x {f}", True),
            ('x "{f}"end', True), ("x [{f}]", True), ('x "--o={f}"', False), ("x a{f}", False),
            ('x -- "{f}"', False), ("x '' {f}", True),
        ]
        for text, refused in rows:
            with self.subTest(template=text):
                template = mcpstudio.CommandTemplate(text)
                if refused:
                    with self.assertRaises(ToolError):
                        template.render({"f": "-rf"})
                else:
                    self.assertIn("-rf", "".join(template.render({"f": "-rf"})))
                self.assertIn("-rf", "".join(template.render({"f": "-rf"}, allow_dash_values=True)))


class CodePositionTests(ScratchDir):
    """Issue 14.2: a field where a value would be code is refused at load, through wrappers."""

    REFUSED = [  # argv templates (config syntax); each holds a field inside code or in the program's place
        "env sh -c {v}", "env -i X=1 sh -c {v}", "env -u HOME bash -c {v}", "env -S 'sh -c' {v}",
        "env --split-string={v}", "timeout 5 sh -c {v}", "timeout -s KILL 5 bash -c {v}",
        "timeout --kill-after=1 5 sh -c {v}", "nice bash -c {v}", "nice -n 5 sh -c {v}", "nohup sh -c {v}",
        "stdbuf -oL sh -c {v}", "stdbuf -o L sh -c {v}", "sudo -u root sh -c {v}", "sudo -s {v}",
        "sudo FOO=1 sh -c {v}", "xargs sh -c {v}", "xargs -I{} sh -c {v}", "xargs -n 1 bash -c {v}",
        "exec sh -c {v}", "command sh -c {v}", "busybox sh -c {v}", "busybox awk {v}",
        "sh -ec {v}", "bash -o pipefail -c {v}", "zsh -c {v}", "dash -c {v}", "ksh -c {v}", "fish -c {v}",
        "fish --command={v}", "sh -c 'echo {v}'", "sh {v}", "bash -- {v}",
        "python3 -Ic 'print({x})'", "python3 -c{v}", "python -c {v}", "python3.12 -c {v}",
        "/usr/bin/python3 -I -c {v}", "python3 -m {v}", "python3 {v}", "pypy3 -c {v}",
        "node -e {v}", "node --eval={v}", "node --eval {v}", "node -p {v}", "node -r {v} x.js", "deno eval {v}",
        "ruby -e {v}", "ruby -ne {v}", "perl -e {v}", "perl -lne {v}", "perl -E {v}", "perl -M{v} x.pl",
        "php -r {v}", "lua -e {v}", "luajit -e {v}", "awk 'BEGIN{print {x}}'", "gawk -F: {v}",
        "mawk -v a=1 {v}", "awk -e {v}", "gawk --source={v}", "awk -f {v}", "nawk {v} file",
        "jq {v}", "jq -r '.a[{v}]'", "jq --arg a b {v}", "jq -n --argjson x 1 {v}", "sed {v}", "sed -n -e {v}",
        "osascript -e {v}", "pwsh -c {v}", "cmd /c {v}", "watch {v}", "ssh host ls {v}", "ssh -p 22 host {v}",
        "su -c {v}", "env {v}", "timeout 5 {v}", "xargs {v}", "sudo {v}", "find . -exec sh -c {v} ;",
        "find . -exec {v} ;", "git -c {v} log", "eval {v}", "source {v}", ". {v}",
        "env {#if a}sh{#else}cat{/if} -c {v}", "python3 -{x} s.py", "env -{x} ls", "git --{x} log",
        "ssh -o {o} h", "bash -C {v}", "fish -C {v}", "docker exec {c} sh -c {v}", "kubectl exec {p} -- python3 -c {v}",
    ]
    ALLOWED = [  # the same programs with values as data
        "python3 script.py {x}", "python3 -c 'import sys; print(sys.argv[1])' {x}", "sh -c 'echo \"$1\"' sh {v}",
        "env x={v} printenv x", "env -u HOME ls {v}", "timeout {t} ls {v}", "nice -n {n} ls {v}",
        "xargs -I{} ls {v}", "sudo -u {u} ls", "jq --arg v {v} '.[$v]'", "jq -r . {file}",
        "jq --argjson n {n} '.[$n]'", "awk -v a={v} '{print a}'", "awk -F {sep} '{print $1}' {file}",
        "sed -n 1p {file}", "node app.js {v}", "ruby x.rb {v}", "perl x.pl {v}", "bash -c 'echo \"$0\"' {v}",
        "git log {v}", "grep -e {p} {f}", "find . -name {v}", "echo {v}", "ls -- {v}", "deno run main.ts {v}",
        "lua x.lua {v}", "php x.php {v}", "ssh {host} uptime", "timeout -s KILL {t} ls", "busybox ls {v}",
        "stdbuf -oL grep {v} file", "command -v ls", "nice -n{n} ls", "awk -va={v} 1", "ssh -p {p} h",
        "sudo --user={u} ls", "timeout -k{d} 5 ls", "grep -r sh {file}", "docker exec {c} python3 x.py {v}",
    ]
    SHELL_REFUSED = [  # "shell": true scripts: every command of the script is walked
        "cat x | sh -c {v}", "eval {v}", "echo a && bash -c {v}", "echo a; python3 -c {v}", "x |{v}",
        "echo a | {v}", "echo a;eval {v}", "if true; then sh -c {v}; fi", "ls > out; {v} x",
        "echo a 2>&1 | sh -c {v}", "( sh -c {v} )", "echo a\nsh -c {v}", "{#if a}echo x | {/if}sh -c {v}",
        "echo | {#if a}sh{#else}cat{/if} -c {v}", "echo a | . {v}", "echo a | timeout 5 sh -c {v}",
        "echo a; declare -i n={v}", "echo a; let {v}",
    ]
    SHELL_ALLOWED = [
        "grep -e {p} -- {f} | wc -l", "du -a -- {folder} 2>/dev/null | sort -rn | head -n {count}",
        "echo {v} > out", "cat < {f} | sort", "for x in {a} {b}; do echo \"$x\"; done",
        "printf '%s,' {#if a}'yes {a}'{#else}no{/if}", "echo a \\| {x}", "sort \"{f}\" | cat",
    ]

    def test_table(self):
        # Wrappers, option bundles and interpreter forms: refused at load with a message naming the
        # field and the word and pointing at arguments or stdin; the data forms load.
        for text in self.REFUSED:
            with self.subTest(template=text):
                with self.assertRaises(TemplateError) as cm:
                    mcpstudio.CommandTemplate(text)
                message = str(cm.exception)
                self.assertRegex(message, r"`(v|x|o)` stands (inside code|for |among the options)")
                self.assertIn("(the word `", message)
                self.assertIn("arguments or through stdin" if "stands for" in message else "may follow an option"
                              if "among" in message else "own argument", message)
        for text in self.ALLOWED:
            with self.subTest(template=text):
                mcpstudio.CommandTemplate(text).check_code(shell=False)
        for text in self.SHELL_REFUSED:
            with self.subTest(shell=text):
                with self.assertRaises(TemplateError):
                    mcpstudio.CommandTemplate(text).check_code(shell=True)
        for text in self.SHELL_ALLOWED:
            with self.subTest(shell=text):
                mcpstudio.CommandTemplate(text).check_code(shell=True)

    def test_template_mode_and_stdin(self):
        # The command-line template walks wrappers too; a stdin template may not feed code to a
        # program that reads its program from stdin (sh, python3 -), but may feed data to jq.
        for words in (["env", "sh", "-c", "{v}"], ["timeout", "5", "python3", "-Ic", "print({x})"],
                      ["nice", "-n", "5", "bash", "-c", "{v}"], ["awk", "BEGIN{print {x}}"]):
            with self.subTest(words=words):
                with self.assertRaises(TemplateError):
                    Template(words)
        for command in ("sh", "python3 -", "sh -s x", "env perl", "xargs ls", "timeout 5 xargs -I{} sh -c {}"):
            self.assertTrue(mcpstudio.CommandTemplate(command).stdin_code, command)
        for command in ("jq .", "cat", "python3 x.py", "sh -c x", "sh script.sh", "awk -f prog.awk", "ssh host ls"):
            self.assertFalse(mcpstudio.CommandTemplate(command).stdin_code, command)
        # A program file that is really stdin, a -f program read from stdin, a guessed inner shell,
        # and ssh with no remote command all read code from stdin (review finding: these passed).
        for command in ("sh /dev/stdin", "bash -", "sh /dev/fd/0", "python3 /dev/stdin", "awk -f -",
                        "awk -f /dev/stdin", "sed -f -", "jq -f /dev/stdin", "docker exec -i c sh", "ssh host"):
            with self.subTest(command=command):
                self.assertTrue(mcpstudio.CommandTemplate(command).stdin_code, command)
                self.assertTrue(Template(command.split()).stdin_code, command)
        # Template mode's --stdin is refused at startup in the same places.
        out = subprocess.run(SERVER + ["--stdin", "{code}", "sh", "/dev/stdin"], capture_output=True, text=True,
                             timeout=WAIT, stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("`sh` reads the program it runs from stdin", out.stderr)

    def test_config_refuses_at_startup(self):
        # serve/check stop with exit 1 and a message naming the file, tool, field and word.
        cases = [
            ({"name": "t", "command": "timeout 5 sh -c {v}"}, "tools[0].command", "`v`"),
            ({"name": "t", "shell": True, "command": "cat x | sh -c {v}"}, "tools[0].command", "`v`"),
            ({"name": "t", "shell": True, "command": "echo a; eval {v}"}, "tools[0].command", "`v`"),
            ({"name": "t", "command": "sh", "stdin": "echo {v}"}, "tools[0].stdin", "`sh` reads the program"),
            ({"name": "t", "command": "xargs ls", "stdin": "{v}"}, "tools[0].stdin", "turns stdin into arguments"),
        ]
        for tool, where, fragment in cases:
            with self.subTest(tool=tool):
                path = os.path.join(self.dir, "c.json")
                with open(path, "w") as f:
                    json.dump({"tools": [tool]}, f)
                out = subprocess.run(SERVER + ["check", "--config", path], capture_output=True, text=True,
                                     timeout=WAIT, stdin=subprocess.DEVNULL)
                self.assertEqual(out.returncode, 1, out.stderr)
                self.assertIn(where, out.stderr)
                self.assertIn(fragment, out.stderr)
                self.assertEqual(out.stdout, "")


class PathTests(ScratchDir):
    """Issue 14.3 and 11: resource template values are decoded once, then checked; "within"
    confines a path to a folder, symlinks followed."""

    def setUp(self):
        super().setUp()
        self.data = os.path.join(self.dir, "data")
        os.makedirs(os.path.join(self.data, "sub"))
        for rel, text in (("secret.txt", "SECRET"), ("data/notes.txt", "notes"), ("data/sub/deep.txt", "deep")):
            with open(os.path.join(self.dir, rel), "w") as f:
                f.write(text)
        os.symlink(os.path.join(self.dir, "secret.txt"), os.path.join(self.data, "link.txt"))
        os.symlink(os.path.join(self.data, "notes.txt"), os.path.join(self.data, "inner.txt"))
        self.config = os.path.join(self.dir, "tools.json")
        with open(self.config, "w") as f:
            json.dump({"working_directory": "data", "resources": [
                {"uri": "file://{name}", "command": "cat {name}"},
                {"uri": "data://{name}", "command": "cat {name}", "within": {"name": "./data"}}],
                "tools": [{"name": "read", "parameters": {"path": {"type": "string"}},
                           "command_template": "cat -- {path}", "within": {"path": "data"}},
                          {"name": "read_all", "parameters": {"paths": {"type": "array"}},
                           "command_template": "cat -- {paths}", "within": {"paths": "data"}}]}, f)

    def read(self, server, uri):
        return server.request("resources/read", {"uri": uri})

    def test_encoded_traversal_is_refused(self):
        # %2e%2e%2f and %2F are decoded before the check, so they are refused like ../ and /.
        with McpProcess("serve", "--config", self.config) as server:
            server.initialize()
            self.assertEqual(self.read(server, "file://notes.txt")["result"]["contents"][0]["text"], "notes")
            for uri in ("file://%2e%2e%2fsecret.txt", "file://%2Fetc%2Fhostname", "file://..",
                        "file://%2e%2e", "file://..%5Csecret.txt", "file://a%00b", "file://C:x"):
                with self.subTest(uri=uri):
                    reply = self.read(server, uri)
                    self.assertIn("error", reply, reply)
                    self.assertEqual(reply["error"]["code"], -32602)
                    self.assertIn("`name`", reply["error"]["message"])
                    self.assertNotIn("SECRET", json.dumps(reply))
            # Decoded once: %252e%252e%252f is the literal name %2e%2e%2f, which does not exist.
            reply = self.read(server, "file://%252e%252e%252fsecret.txt")
            self.assertNotIn("SECRET", json.dumps(reply))

    def test_within_confines_resources_and_tools(self):
        # A "within" path may go into subfolders and through symlinks that stay inside, never out.
        with McpProcess("serve", "--config", self.config) as server:
            server.initialize()
            self.assertEqual(self.read(server, "data://sub%2Fdeep.txt")["result"]["contents"][0]["text"], "deep")
            self.assertEqual(self.read(server, "data://inner.txt")["result"]["contents"][0]["text"], "notes")
            for uri in ("data://%2e%2e%2fsecret.txt", "data://%2Fetc%2Fhostname", "data://link.txt",
                        "data://sub%2F..%2F..%2Fsecret.txt"):
                with self.subTest(uri=uri):
                    reply = self.read(server, uri)
                    self.assertIn("leads outside", reply.get("error", {}).get("message", ""), reply)
                    self.assertNotIn("SECRET", json.dumps(reply))
            self.assertEqual(text_of(server.call("read", {"path": "sub/deep.txt"})), "deep")
            self.assertEqual(text_of(server.call("read_all", {"paths": ["notes.txt", "sub/deep.txt"]})), "notesdeep")
            for args in ({"path": "../secret.txt"}, {"path": "/etc/hostname"}, {"path": "link.txt"},
                         {"paths": ["notes.txt", "link.txt"]}):
                with self.subTest(args=args):
                    result = server.call("read_all" if "paths" in args else "read", args)
                    self.assertTrue(result["isError"])
                    self.assertIn("leads outside " + os.path.realpath(self.data), text_of(result))
                    self.assertNotIn("SECRET", text_of(result))

    def test_within_errors_at_load(self):
        # "within" must name a string parameter and an existing folder.
        for within, fragment in (({"nope": "data"}, "not a parameter"), ({"n": "data"}, "only a string"),
                                 ({"path": "missing"}, "no such folder"), ({"path": 5}, "expected a folder")):
            with self.subTest(within=within):
                with open(self.config, "w") as f:
                    json.dump({"tools": [{"name": "t", "command_template": "cat {path} {n}", "within": within,
                                          "parameters": {"path": {"type": "string"}, "n": {"type": "integer"}}}]}, f)
                out = subprocess.run(SERVER + ["check", "--config", self.config], capture_output=True,
                                     text=True, timeout=WAIT, stdin=subprocess.DEVNULL)
                self.assertEqual(out.returncode, 1)
                self.assertIn("tools[0].within.", out.stderr)
                self.assertIn(fragment, out.stderr)


class InProcessHttp:
    """An HttpServer in this process (its own event loop in a thread) serving `echo {message}`,
    with limits a test may shrink (max_connections, max_pending, header_timeout, idle_timeout)."""

    def __init__(self, **limits):
        import asyncio
        log = mcpstudio.Log()
        runner = mcpstudio.ProcessRunner(log)
        tool = mcpstudio.CommandTool("echo", Template(["echo", "{message}"]), runner, mcpstudio.RunSettings())
        server = mcpstudio.Server(mcpstudio.Catalog([mcpstudio.TemplateTools([tool])]), log)
        self.http = mcpstudio.HttpServer(server, log, "127.0.0.1", 0)
        for key, value in limits.items():
            if not hasattr(self.http, key):
                raise AssertionError("HttpServer has no limit %r" % key)
            setattr(self.http, key, value)
        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.loop.run_until_complete(self.http.start())
            server.catalog.start(server)
            started.set()
            self.loop.run_forever()
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        if not started.wait(WAIT):
            raise AssertionError("the in-process HTTP server did not start")
        self.port = self.http.port

    def close(self):
        import asyncio
        asyncio.run_coroutine_threadsafe(self.http.close(), self.loop).result(WAIT)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(WAIT)


def http_request(body=None, headers=None, close=True) -> bytes:
    """A raw 2026-07-28 `server/discover` POST (or `body`), headers in order, Host first."""
    if body is None:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                           "params": {"_meta": MODERN_META}}).encode()
    lines = [("Host", "127.0.0.1"), ("Content-Type", "application/json"), ("Accept", "application/json"),
             ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "server/discover")]
    lines += list(headers or [])
    if not any(k.lower() in ("content-length", "transfer-encoding") for k, _ in lines):
        lines.append(("Content-Length", str(len(body))))
    if close:
        lines.append(("Connection", "close"))
    return (b"POST /mcp HTTP/1.1\r\n" + b"".join(b"%s: %s\r\n" % (k.encode(), v.encode()) for k, v in lines)
            + b"\r\n" + body)


def http_exchange(port, data, timeout=5.0) -> bytes:
    """Send raw bytes, then read until the server closes (or `timeout` passes)."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
        raw.sendall(data)
        out = b""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                chunk = raw.recv(65536)
                if not chunk:
                    break
                out += chunk
        except (socket.timeout, ConnectionResetError):
            pass
        return out



class HttpQueueTests(unittest.TestCase):
    def test_a_stream_nobody_reads_stays_bounded(self):
        # Notifications for an SSE stream the client does not read are capped at HTTP_MAX_QUEUED
        # (then dropped and counted); a reply is never dropped.
        async def run():
            transport = mcpstudio._HttpTransport(mcpstudio.Log())
            transport.stream = asyncio.Queue()
            for _ in range(mcpstudio.HTTP_MAX_QUEUED + 500):
                transport.send({"jsonrpc": "2.0", "method": "notifications/message",
                                "params": {"level": "info", "data": "x" * 1000}})
            exchange = transport.exchanges[7] = mcpstudio._Exchange(streaming=True)
            for _ in range(mcpstudio.HTTP_MAX_QUEUED + 10):
                transport.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}, related=7)
            transport.send({"jsonrpc": "2.0", "id": 7, "result": {}})
            return transport, exchange
        transport, exchange = asyncio.run(run())
        self.assertEqual(transport.stream.qsize(), mcpstudio.HTTP_MAX_QUEUED)
        self.assertEqual(transport.dropped, 510)
        self.assertEqual(exchange.queue.qsize(), mcpstudio.HTTP_MAX_QUEUED + 1)  # the reply got in
        *_, (last, final) = [exchange.queue.get_nowait() for _ in range(exchange.queue.qsize())]
        self.assertEqual((last["id"], final), (7, True))


class HttpRequestReadingTests(unittest.TestCase):
    """Reading one HTTP/1.1 request strictly (RFC 9112), in-process: bytes in a StreamReader,
    the request or the status it is refused with out. No socket, no server."""

    def read(self, data: bytes):
        """(method, target, version, headers, body), or (status, message) of the HttpError."""
        async def run():
            reader = asyncio.StreamReader(limit=mcpstudio.HTTP_MAX_HEADER)
            reader.feed_data(data)
            reader.feed_eof()
            try:
                method, target, version, headers = await mcpstudio._read_head(reader)
                mcpstudio._framing(version, headers)
                return method, target, version, headers, await mcpstudio._read_body(reader, headers)
            except mcpstudio.HttpError as exc:
                return exc.status, str(exc)
            except asyncio.IncompleteReadError:
                return "incomplete", ""
        return asyncio.run(run())

    def test_table(self):
        head = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
        chunked = head + b"Transfer-Encoding: chunked\r\n\r\n"
        host = {"host": "localhost"}
        too_big = mcpstudio.HTTP_MAX_BODY + 1
        rows = [  # (what, bytes, the request or (status, a part of the message))
            ("Content-Length", head + b"Content-Length: 2\r\n\r\n{}",
             ("POST", "/mcp", "HTTP/1.1", dict(host, **{"content-length": "2"}), b"{}")),
            ("no body", b"GET /mcp?x=1 HTTP/1.0\r\nHOST:  localhost \r\n\r\n", ("GET", "/mcp?x=1", "HTTP/1.0", host, b"")),
            ("a repeatable header is joined", head + b"Accept: a\r\nAccept: b\r\n\r\n",
             ("POST", "/mcp", "HTTP/1.1", dict(host, accept="a, b"), b"")),
            ("two Hosts", head + b"Host: evil.example\r\n\r\n", (400, "Host header is given twice")),
            ("two Content-Lengths", head + b"Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
             (400, "Content-Length header is given twice")),
            ("two spaces in the request line", b"POST  /mcp HTTP/1.1\r\n\r\n", (400, "malformed request line")),
            ("HTTP/2.0", b"POST /mcp HTTP/2.0\r\n\r\n", (400, "malformed request line")),
            ("a bare LF", b"POST /mcp HTTP/1.1\n\r\n", (400, "malformed request line")),
            ("space before the colon", head + b"Content-Length : 2\r\n\r\n{}", (400, "malformed header line")),
            ("a folded line", head + b"X-A: 1\r\n  2\r\n\r\n", (400, "malformed header line")),
            ("a NUL in a value", head + b"X-A: a\x00b\r\n\r\n", (400, "malformed header line")),
            ("a line over the limit", head + b"X-A: " + b"a" * mcpstudio.HTTP_MAX_HEADER + b"\r\n\r\n",
             (431, "over %d bytes" % mcpstudio.HTTP_MAX_HEADER)),
            ("101 headers", head + b"".join(b"X-%d: 1\r\n" % i for i in range(101)) + b"\r\n", (431, "more than 100 header fields")),
            ("Transfer-Encoding and Content-Length", head + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
             (400, "both Transfer-Encoding and Content-Length")),
            ("Transfer-Encoding on HTTP/1.0", b"POST /mcp HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
             (400, "needs HTTP/1.1")),
            ("Transfer-Encoding gzip", head + b"Transfer-Encoding: gzip\r\n\r\n", (501, "gzip is not supported")),
            ("Content-Length +2", head + b"Content-Length: +2\r\n\r\n{}", (400, "malformed Content-Length")),
            ("Content-Length 0x2", head + b"Content-Length: 0x2\r\n\r\n{}", (400, "malformed Content-Length")),
            ("Content-Length of 16 digits", head + b"Content-Length: 1000000000000000\r\n\r\n", (413, "over the limit")),
            ("Content-Length over the body limit", head + b"Content-Length: %d\r\n\r\n" % too_big, (413, "at most")),
            ("a body cut short", head + b"Content-Length: 5\r\n\r\n{}", ("incomplete", "")),
            ("chunked", chunked + b"3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n",
             ("POST", "/mcp", "HTTP/1.1", dict(host, **{"transfer-encoding": "chunked"}), b"abcde")),
            ("chunked with a trailer", chunked + b"1\r\na\r\n0\r\nX-T: 1\r\n\r\n",
             ("POST", "/mcp", "HTTP/1.1", dict(host, **{"transfer-encoding": "chunked"}), b"a")),
            ("a malformed trailer", chunked + b"0\r\nnot a header\r\n\r\n", (400, "malformed or oversized trailer")),
            ("a chunk size that is not hex", chunked + b"xyz\r\n", (400, "malformed chunk size")),
            ("a chunk without its CRLF", chunked + b"3\r\nabcX\r\n0\r\n\r\n", (400, "must end with CRLF")),
            ("chunks over the body limit", chunked + b"%x\r\n" % too_big, (413, "at most")),
        ]
        for what, data, expected in rows:
            with self.subTest(what):
                got = self.read(data)
                if isinstance(expected[0], int) or expected[0] == "incomplete":
                    self.assertEqual(got[0], expected[0], got)
                    self.assertIn(expected[1], got[1])
                else:
                    self.assertEqual(got, expected)


class HttpHardeningTests(ScratchDir):
    """Issue 14.4-5 and 10: the connection cap, deadlines and strict RFC 9112 parsing."""

    def test_idle_sockets_do_not_lock_out_a_client(self):
        # 520 sockets that never send a byte (more than the 512 cap) leave room for a client
        # with the token: unproven connections have their own small share, the oldest giving way.
        import socket
        with HttpServerProcess("--http-token", "tok-1234-secret", "echo", "{message}") as server:
            idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(520)]
            try:
                time.sleep(0.5)
                reply = http_exchange(server.port, http_request(headers=[
                    ("Authorization", "Bearer tok-1234-secret")]), timeout=10)
                self.assertTrue(reply.startswith(b"HTTP/1.1 200 "), reply[:200])
            finally:
                for sock in idle:
                    sock.close()

    def test_small_caps_and_deadlines(self):
        # With a cap of 8 (2 pending): idle sockets give way, the 7th proven connection gets 503,
        # and a request line dripped slowly, or never sent, is cut at the head deadline (408).
        import socket
        server = InProcessHttp(max_connections=8, max_pending=2, header_timeout=1.0, idle_timeout=30.0)
        try:
            idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(20)]
            self.assertTrue(http_exchange(server.port, http_request()).startswith(b"HTTP/1.1 200 "))
            for sock in idle:
                sock.close()
            kept = []
            for _ in range(6):  # proven keep-alive connections, held open
                sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                sock.sendall(http_request(close=False))
                self.assertTrue(sock.recv(65536).startswith(b"HTTP/1.1 200 "))
                kept.append(sock)
            self.assertTrue(http_exchange(server.port, http_request()).startswith(b"HTTP/1.1 503 "))
            for sock in kept:
                sock.close()
            self.assertTrue(wait_until(lambda: not server.http.trusted, 5))
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as slow:
                started = time.monotonic()
                for byte in b"POST /mcp":  # one byte every 0.25 s: never a whole line in time
                    try:
                        slow.sendall(bytes([byte]))
                    except OSError:
                        break
                    time.sleep(0.25)
                reply = slow.recv(65536)
                self.assertTrue(reply.startswith(b"HTTP/1.1 408 "), reply)
                self.assertLess(time.monotonic() - started, 4)
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as silent:
                started = time.monotonic()
                self.assertTrue(silent.recv(65536).startswith(b"HTTP/1.1 408 "))
                self.assertLess(time.monotonic() - started, 4)
        finally:
            server.close()

    def test_strict_parsing(self):
        # Each malformed or ambiguous request gets one 4xx reply and the connection closes, so a
        # request hidden in a body is never answered.
        smuggled = http_request(close=False)
        cases = [
            ("two Host headers", http_request(headers=[("Host", "evil.example")]), 400),
            ("Origin with userinfo", http_request(headers=[("Origin", "http://localhost:80@evil.example")]), 403),
            ("Origin with a path", http_request(headers=[("Origin", "http://127.0.0.1/x")]), 403),
            ("Origin of another host", http_request(headers=[("Origin", "http://localhost.evil.example")]), 403),
            ("Host with userinfo", http_request().replace(b"Host: 127.0.0.1", b"Host: localhost@evil.example"), 400),
            ("TE and CL", http_request(body=b"0\r\n\r\n" + smuggled, headers=[
                ("Transfer-Encoding", "chunked"), ("Content-Length", str(5 + len(smuggled)))], close=False), 400),
            ("CL +N", http_request(headers=[("Content-Length", "+2")], body=b"{}"), 400),
            ("CL twice", http_request(headers=[("Content-Length", "2"), ("Content-Length", "2")], body=b"{}"), 400),
            ("chunk 0x", http_request(headers=[("Transfer-Encoding", "chunked")], body=b"0x2\r\n{}\r\n0\r\n\r\n"), 400),
            ("chunk +", http_request(headers=[("Transfer-Encoding", "chunked")], body=b"+2\r\n{}\r\n0\r\n\r\n"), 400),
            ("chunk without CRLF", http_request(headers=[("Transfer-Encoding", "chunked")],
                                                body=b"2\r\n{}XX0\r\n\r\n"), 400),
            ("space before colon", http_request().replace(b"Accept:", b"Accept :"), 400),
            ("folded header", http_request().replace(b"Accept: application/json\r\n",
                                                     b"Accept: application/json\r\n  , text/plain\r\n"), 400),
            ("two spaces in the request line", http_request().replace(b"POST /mcp", b"POST  /mcp"), 400),
            ("oversized request line", b"POST /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n", 431),
            ("oversized headers", http_request(headers=[("X-Big", "y" * 20000)]), 431),
            ("chunked body over the cap", http_request(headers=[("Transfer-Encoding", "chunked")],
                                                       body=b"500000\r\n"), 413),
        ]
        with HttpServerProcess("echo", "{message}") as server:
            for name, data, status in cases:
                with self.subTest(case=name):
                    reply = http_exchange(server.port, data)
                    self.assertTrue(reply.startswith(b"HTTP/1.1 %d " % status), reply[:300])
                    self.assertEqual(reply.count(b"HTTP/1.1 "), 1, reply)  # and then closed
            # A well-formed chunked body (two chunks, an extension, a trailer) is still served.
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                               "params": {"_meta": MODERN_META}}).encode()
            chunked = b"5;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\nX-Trailer: 1\r\n\r\n" % (body[:5], len(body) - 5, body[5:])
            ok = http_exchange(server.port, http_request(body=chunked, headers=[("Transfer-Encoding", "chunked")]))
            self.assertTrue(ok.startswith(b"HTTP/1.1 200 "), ok[:200])


class StripCommentsTests(unittest.TestCase):
    def test_table(self):
        # Comments and trailing commas go; strings keep them; lines and columns stay put.
        rows = [
            ('{"a": 1, // note\n "b": 2,}', {"a": 1, "b": 2}),
            ('{"a": "// not a comment", /* block\n comment */ "b": [1, 2,],}', {"a": "// not a comment", "b": [1, 2]}),
            ('{"a": "x\\"//y"}', {"a": 'x"//y'}),
            ('[1, , 2]', None),
            ('{"tools": [\n {"a": 1}, // last\n]}', {"tools": [{"a": 1}]}),
            ('{"a": 1, /* c */ }', {"a": 1}),
        ]
        for text, expected in rows:
            with self.subTest(text=text):
                stripped = mcpstudio.strip_json_comments(text)
                self.assertEqual(stripped.count("\n"), text.count("\n"))
                if expected is None:
                    with self.assertRaises(ValueError):
                        json.loads(stripped)
                else:
                    self.assertEqual(json.loads(stripped), expected)


class ConfigTests(ScratchDir):
    def write_config(self, data, name="tools.json") -> str:
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(data if isinstance(data, str) else json.dumps(data, indent=2))
        return path

    def serve(self, config, *extra, env=None):
        return McpProcess(*extra, "serve", "--config", config, env=env)

    def run_cli(self, *args, env=None, cwd=None):
        return subprocess.run(SERVER + list(args), capture_output=True, text=True, timeout=WAIT,
                              env=env, cwd=cwd, stdin=subprocess.DEVNULL)

    def test_both_tool_forms(self):
        # A template string (core syntax) and the CLI-as-MCP form with typed parameters and defaults.
        config = self.write_config("""{
          // comments and trailing commas are fine
          "name": "demo", "instructions": "Use these tools.",
          "tools": [
            {"name": "echo_words", "command": "echo [--loud] {words...}", "title": "Echo",
             "annotations": {"readOnlyHint": true}},
            {"name": "count", "description": "Count up.",
             "parameters": {"n": {"type": "integer", "default": 3, "description": "how far"},
                            "sep": {"type": "string", "enum": [",", ";"], "default": ","},
                            "label": {"type": "string", "required": false}},
             "command_template": "%s -c 'import sys; print(sys.argv[1:])' {n} {sep} {#if label}--label={label}{/if}"},
          ],
        }""" % PY)
        with self.serve(config) as server:
            init = server.initialize()["result"]
            self.assertEqual(init["instructions"], "Use these tools.")
            self.assertEqual(init["serverInfo"]["title"], "mcpstudio: demo")
            tools = {t["name"]: t for t in server.request("tools/list")["result"]["tools"]}
            self.assertEqual(tools["echo_words"]["title"], "Echo")
            self.assertEqual(tools["echo_words"]["annotations"], {"readOnlyHint": True})
            schema = tools["count"]["inputSchema"]
            self.assertEqual(schema["properties"]["n"], {"type": "integer", "default": 3, "description": "how far"})
            self.assertNotIn("required", schema)
            self.assertEqual(text_of(server.call("echo_words", {"words": ["a", "b"], "loud": True})), "--loud a b\n")
            self.assertEqual(text_of(server.call("count", {})), "['3', ',']\n")
            self.assertEqual(text_of(server.call("count", {"n": 5, "sep": ";", "label": "x y"})),
                             "['5', ';', '--label=x y']\n")
            bad = server.call("count", {"n": "five"})
            self.assertTrue(bad["isError"])
            self.assertIn("`n`", text_of(bad))
            self.assertIn('one of ",", ";"', text_of(server.call("count", {"sep": "|"})))

    def test_injection_stays_literal(self):
        # Values full of shell syntax are single literal arguments, with and without "shell": true.
        args_py = self.script("args.py", "import json, sys; print(json.dumps(sys.argv[1:]))\n")
        config = self.write_config({"tools": [
            {"name": "plain", "parameters": {"v": {"type": "string"}},
             "command_template": "%s %s {v} 'quoted {v}' \"dq {v}\"" % (PY, args_py)},
            {"name": "piped", "shell": True, "parameters": {"v": {"type": "string"}},
             "command_template": "printf '%%s\\n' {v} '{v}' \"{v}\" | %s -c 'import sys, json; print(json.dumps(sys.stdin.read()))'" % PY},
        ]})
        nasty = ["; rm -rf /tmp/x", "$(touch pwned)", "`touch pwned`", "a'b\"c", "line1\nline2", "$HOME", "*", "\\"]
        with self.serve(config) as server:
            server.initialize()
            for value in nasty:
                with self.subTest(value=value):
                    plain = json.loads(text_of(server.call("plain", {"v": value})))
                    self.assertEqual(plain, [value, "quoted " + value, "dq " + value])
                    piped = json.loads(text_of(server.call("piped", {"v": value})))
                    self.assertEqual(piped, (value + "\n") * 3)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "pwned")))
        self.assertFalse(os.path.exists("pwned"))

    def test_hyphenated_parameters_and_blocks_in_the_command_form(self):
        # A parameter named dry-run works in fields and blocks; in the `command` form a block
        # tests one of the template's own fields, and a field inside a block is optional.
        config = self.write_config({"tools": [
            {"name": "p", "parameters": {"dry-run": {"type": "boolean", "default": False}, "my-file": {"type": "string"}},
             "command_template": "echo {#if dry-run}--dry-run{/if} {my-file}"},
            {"name": "c", "command": "echo x {#if n}-n {n}{/if}"}]})
        with self.serve(config) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("p", {"my-file": "f", "dry-run": True})), "--dry-run f\n")
            self.assertEqual(text_of(server.call("c", {})), "x\n")
            self.assertEqual(text_of(server.call("c", {"n": "3"})), "x -n 3\n")

    def test_env_expansion_edge_cases(self):
        # ${X-d} and ${X:-d} (with a nested ${Y}); an empty variable is set for ${X} and ${X-d}.
        loader = mcpstudio.ConfigLoader(self.write_config({}), environ={"EMPTY": "", "Y": "why"})
        for text, expected in (("${UNSET-d}", "d"), ("${UNSET:-${Y}}", "why"), ("${EMPTY}", ""),
                               ("${EMPTY-d}", ""), ("${EMPTY:-d}", "d"), ("a$$b", "a$b")):
            with self.subTest(text=text):
                self.assertEqual(loader.expand(text, "k"), expected)

    def test_scripts_in_config_follow_the_command_line(self):
        # --help-timeout applies to a config's script folders too.
        folder = os.path.join(self.dir, "scripts")
        os.mkdir(folder)
        self.script("scripts/slow", "#!/bin/sh\n[ \"$1\" = --help ] && { sleep 5; echo '{}'; exit 0; }\necho hi\n")
        config = self.write_config({"scripts": ["scripts"]})
        with self.serve(config, "--help-timeout", "0.5", env=dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "c"))) as server:
            server.initialize()
            started = time.monotonic()
            self.assertEqual(server.request("tools/list")["result"]["tools"], [])
            self.assertLess(time.monotonic() - started, 3)

    def test_stdin_template(self):
        # "stdin" is rendered and fed to the command (for tools like jq).
        config = self.write_config({"tools": [
            {"name": "upper", "parameters": {"text": {"type": "string"}, "times": {"type": "integer", "default": 1}},
             "stdin": "{text}\n{#if times}times={times}{/if}",
             "command_template": "%s -c 'import sys; print(sys.stdin.read().upper())'" % PY}]})
        with self.serve(config) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("upper", {"text": "héllo {x}"})), "HÉLLO {X}\nTIMES=1\n")

    def test_environment_and_paths(self):
        # ${VAR}, ${VAR:-default}, ${ENV:VAR}, ${env:VAR} and $$ expand in environment and
        # working_directory; relative paths are relative to the file; templates are never expanded.
        sub = os.path.join(self.dir, "sub")
        os.mkdir(sub)
        config = self.write_config({
            "working_directory": "sub",
            "environment": {"A": "${MCPS_A}", "B": "${MCPS_UNSET:-fallback}", "C": "${ENV:MCPS_A}-${env:MCPS_A}",
                            "D": "cost $$5"},
            "tools": [{"name": "show", "command":
                       "%s -c \"import os, sys; print(os.getcwd(), os.environ['A'], os.environ['B'], os.environ['C'], os.environ['D'], os.environ['E'], sys.argv[1])\" ${MCPS_A}" % PY,
                       "environment": {"E": "tool-${MCPS_A}"}}]})
        env = dict(os.environ, MCPS_A="alpha")
        with self.serve(config, env=env) as server:
            server.initialize()
            # In the template, {MCPS_A} is a field (a tool argument), never the environment variable.
            self.assertEqual(text_of(server.call("show", {"MCPS_A": "arg"})),
                             "%s alpha fallback alpha-alpha cost $5 tool-alpha $arg\n" % os.path.realpath(sub))

    def test_timeouts(self):
        # The tool's timeout, else the file's, else --timeout, else 30 s.
        config = self.write_config({"timeout": 1, "tools": [
            {"name": "own", "command": "sleep 5", "timeout": 0.5},
            {"name": "files", "command": "sleep 5"}]})
        with self.serve(config, "--timeout", "20") as server:
            server.initialize()
            self.assertIn("timed out after 0.5 s", text_of(server.call("own", {})))
            self.assertIn("timed out after 1 s", text_of(server.call("files", {})))
        loader = mcpstudio.ConfigLoader(self.write_config({"tools": [{"name": "t", "command": "true"}]}, "t2.json"))
        log = mcpstudio.Log()
        sources, _ = loader.load(mcpstudio.ProcessRunner(log), log, mcpstudio.RunSettings(timeout=None))
        self.assertEqual(sources[0].tools["t"].settings.timeout, 30)
        sources, _ = loader.load(mcpstudio.ProcessRunner(log), log, mcpstudio.RunSettings(timeout=7))
        self.assertEqual(sources[0].tools["t"].settings.timeout, 7)

    def test_results_follow_template_mode(self):
        # Exit codes, labelled stderr and the option-injection guard work as in template mode.
        config = self.write_config({"tools": [
            {"name": "fail", "command": "sh -c 'echo out; echo err >&2; exit 3'"},
            {"name": "cat", "parameters": {"path": {"type": "string"}}, "command_template": "cat {path}"}]})
        with self.serve(config) as server:
            server.initialize()
            result = server.call("fail", {})
            self.assertTrue(result["isError"])
            self.assertIn("exited with code 3", text_of(result))
            self.assertIn("out", text_of(result))
            self.assertIn("[stderr]\nerr", text_of(result))
            self.assertIn("starts with '-'", text_of(server.call("cat", {"path": "--help"})))

    def test_resources(self):
        # Fixed resources and resource templates run their command; failures are errors that say why.
        config = self.write_config({"resources": [
            {"uri": "demo://hello", "name": "hello", "description": "a greeting", "command": "echo hello"},
            {"uri": "demo://echo/{word}", "name": "echo", "command": "echo {word}", "mime_type": "text/x-word"},
            {"uri": "demo://broken", "name": "broken", "command": "sh -c 'echo nope >&2; exit 2'"}]})
        with self.serve(config) as server:
            init = server.initialize()["result"]
            self.assertIn("resources", init["capabilities"])
            listed = server.request("resources/list")["result"]["resources"]
            self.assertEqual([r["uri"] for r in listed], ["demo://hello", "demo://broken"])
            self.assertEqual(listed[0], {"uri": "demo://hello", "name": "hello", "mimeType": "text/plain",
                                         "description": "a greeting"})
            templates = server.request("resources/templates/list")["result"]["resourceTemplates"]
            self.assertEqual(templates, [{"uriTemplate": "demo://echo/{word}", "name": "echo", "mimeType": "text/x-word"}])
            read = server.request("resources/read", {"uri": "demo://hello"})["result"]["contents"]
            self.assertEqual(read, [{"uri": "demo://hello", "mimeType": "text/plain", "text": "hello\n"}])
            read = server.request("resources/read", {"uri": "demo://echo/two%20words"})["result"]["contents"][0]
            self.assertEqual((read["text"], read["mimeType"]), ("two words\n", "text/x-word"))
            error = server.request("resources/read", {"uri": "demo://broken"})["error"]
            self.assertIn("exited with code 2", error["message"])
            self.assertIn("nope", error["message"])
            self.assertEqual(server.request("resources/read", {"uri": "demo://other"})["error"]["code"], -32002)

    def test_scripts_in_config(self):
        # "scripts" serves folders as in script mode, relative to the config file.
        folder = os.path.join(self.dir, "scripts")
        os.mkdir(folder)
        self.script("scripts/hi", "#!/bin/sh\n[ \"$1\" = --help ] && { echo '{}'; exit 0; }\necho hi\n")
        config = self.write_config({"scripts": ["scripts"], "tools": [{"name": "t", "command": "true"}]})
        with self.serve(config, env=dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))) as server:
            server.initialize()
            self.assertEqual(sorted(t["name"] for t in server.request("tools/list")["result"]["tools"]), ["hi", "t"])
            self.assertEqual(text_of(server.call("hi", {})), "hi\n")

    def test_errors_in_the_file(self):
        # Every mistake stops startup with exit 1, nothing on stdout, and a message naming the place.
        cases = [
            ('{"tools": [\n  {"name": "a", "command": "x"}\n  {"name": "b"}]}', ["tools.json:3:3", "invalid JSON"]),
            ('[]', ["JSON object"]),
            ({"tool": []}, ["tool: unknown key (did you mean `tools`?)"]),
            ({"tools": [{"name": "a", "comand": "x"}]}, ["tools[0].comand", "did you mean `command`"]),
            ({"tools": [{"command": "x"}]}, ["tools[0]", "needs a `name`"]),
            ({"tools": [{"name": "a.b", "command": "x"}]}, ["tools[0].name", "letters, digits"]),
            ({"tools": [{"name": "a"}]}, ["tools[0]", "exactly one of `command` and `command_template`"]),
            ({"tools": [{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]}, ["tools[1].name", "already"]),
            ({"tools": [{"name": "a", "command_template": "x {limit}",
                         "parameters": {"limit": {"type": "int"}}}]},
             ["tools[0].parameters.limit.type", "did you mean `integer`"]),
            ({"tools": [{"name": "a", "command_template": "x {limt}",
                         "parameters": {"limit": {"type": "integer"}}}]},
             ["tools[0].command_template", "`limt`", "not a declared parameter", "did you mean `limit`"]),
            ({"tools": [{"name": "a", "command_template": "x {n}",
                         "parameters": {"n": {"type": "integer", "default": "three"}}}]},
             ["tools[0].parameters.n.default", "integer"]),
            ({"tools": [{"name": "a", "command_template": "x {#if n}", "parameters": {"n": {}}}]},
             ["tools[0].command_template", "never closed"]),
            ({"tools": [{"name": "a", "command": "x", "timeout": "soon"}]}, ["tools[0].timeout", "a number"]),
            ({"environment": {"K": "${MCPS_SURELY_UNSET}"}}, ["environment.K", "${MCPS_SURELY_UNSET} is not set"]),
            ({"working_directory": "nowhere"}, ["working_directory", "no such folder"]),
            ({"resources": [{"uri": "x://{a}", "command": "echo {b}"}]}, ["resources[0].command", "`b`"]),
            ({"mcpServers": {"a.b": {"command": "x"}}, "servers": {"a/b": {"command": "y"}}},
             ["servers.a/b", "`a_b` is also the id of mcpServers.a.b"]),
            ({"mcpServers": {"a": {"command": "x"}}, "namespaces": {"w": ["b"]}},
             ["namespaces.w.servers[0]", "no server \"b\""]),
            ({"mcpServers": {}, "namespaces": {"w": {"servers": [], "tool": {}}}}, ["namespaces.w.tool", "did you mean"]),
            ({"tools": [{"name": "a", "command": "x", "annotations": {"readOnly": True}}]},
             ["tools[0].annotations.readOnly", "did you mean `readOnlyHint`"]),
            ('{"name": "a", "name": "b"}', ["appears twice"]),
            ({"resources": [{"uri": "x://{a}/{a}", "command": "echo {a}"}]}, ["resources[0].uri", "twice"]),
            ({"resources": [{"uri": "", "command": "echo"}]}, ["resources[0].uri", "not a URI"]),
            ({"resources": [{"uri": "x://y", "command": "echo", "timeout": -1}]}, ["resources[0].timeout"]),
            ({"environment": {"A=B": "x"}}, ["environment.A=B", "variable name"]),
            ({"tools": [{"name": "a", "command_template": "x {s}",
                         "parameters": {"s": {"type": "string", "enum": [1, 2]}}}]}, ["tools[0].parameters.s.enum"]),
            ({"tools": [{"name": "a", "command": "echo {#if verbose}-v{/if}"}]},
             ["tools[0].command", "`verbose`", "not a field of the template"]),
            ({"tools": [{"name": "a", "shell": True, "command": "ls \"$(dirname {p})\""}]},
             ["tools[0].command", "`p`", "$( )"]),
            ({"tools": [{"name": "a", "command": "{#if x}echo{/if} {x}"}]}, ["tools[0].command", "first word"]),
            ({"scripts": [{"path": ".", "include": [1]}]}, ["scripts[0].include", "glob"]),
        ]
        for index, (data, fragments) in enumerate(cases):
            with self.subTest(data=data):
                path = self.write_config(data)
                # serve and check load a file the same way (_build_server): serve is run on every fourth case.
                for args in (["check", "--config", path],) + ((["serve", "--config", path],) if index % 4 == 0 else ()):
                    proc = self.run_cli(*args)
                    self.assertEqual(proc.returncode, 1, proc.stderr)
                    self.assertEqual(proc.stdout, "")
                    self.assertTrue(proc.stderr.startswith("mcpstudio: error: %s" % path), proc.stderr)
                    for fragment in fragments:
                        self.assertIn(fragment, proc.stderr)
        proc = self.run_cli("serve", "--config", os.path.join(self.dir, "missing.json"))
        self.assertEqual(proc.returncode, 1)
        self.assertIn("no such file", proc.stderr)

    def test_check_prints_tools_and_example_argv(self):
        config = self.write_config({"tools": [
            {"name": "log", "parameters": {"limit": {"type": "integer"}, "path": {"type": "array", "required": False}},
             "command_template": "git log -n {limit} -- {path}"}],
            "resources": [{"uri": "git://status", "command": "git status"}]})
        proc = self.run_cli("check", "--config", config)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("log", proc.stdout)
        self.assertIn("limit            integer  required", proc.stdout)
        self.assertIn("example: git log -n 1 -- '<path>'", proc.stdout)
        self.assertIn("git://status", proc.stdout)

    def test_check_warns(self):
        # check names a command that is not on PATH and a parameter no template uses.
        config = self.write_config({"tools": [{"name": "t", "parameters": {"x": {"type": "string"}, "unused": {}},
                                               "command_template": "no-such-command-xyz {x}"}]})
        proc = self.run_cli("check", "--config", config)
        self.assertEqual(proc.returncode, 0)
        self.assertIn("`no-such-command-xyz` is not on PATH", proc.stdout)
        self.assertIn("`unused` is declared but no template uses it", proc.stdout)

    def test_init(self):
        # init writes a commented starter config that passes check, and never overwrites by accident.
        proc = self.run_cli("init", "mytool", "--command", "git", "--description", "Git tools", cwd=self.dir)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        path = os.path.join(self.dir, "mytool.json")
        with open(path) as f:
            self.assertIn("//", f.read())
        check = self.run_cli("check", "--config", path)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertIn("mytool_run", check.stdout)
        again = self.run_cli("init", "mytool", "--command", "git", cwd=self.dir)
        self.assertEqual(again.returncode, 1)
        self.assertIn("--force", again.stderr)
        self.assertEqual(self.run_cli("init", "mytool", "--command", "ls", "--force", cwd=self.dir).returncode, 0)
        self.assertEqual(self.run_cli("init", "mytool").returncode, 2)
        # A --command with arguments is split into words; quotes and backslashes still give valid JSON.
        self.assertEqual(self.run_cli("init", "lister", "--command", "ls -la", cwd=self.dir).returncode, 0)
        with McpProcess("serve", "--config", os.path.join(self.dir, "lister.json")) as server:
            server.initialize()
            self.assertFalse(server.call("lister_run", {"args": [self.dir]})["isError"])
        self.assertEqual(self.run_cli("init", "win", "--command", 'C:\\tools\\x "y".exe', cwd=self.dir).returncode, 0)
        self.assertEqual(self.run_cli("check", "--config", os.path.join(self.dir, "win.json")).returncode, 0)

    def test_default_config_location(self):
        # Without --config, serve and check use $XDG_CONFIG_HOME/mcpstudio/config.json.
        home = os.path.join(self.dir, "xdg")
        env = dict(os.environ, XDG_CONFIG_HOME=home)
        proc = self.run_cli("check", env=env)
        self.assertEqual(proc.returncode, 2)
        self.assertIn(os.path.join(home, "mcpstudio", "config.json"), proc.stderr)
        os.makedirs(os.path.join(home, "mcpstudio"))
        self.write_config({"tools": [{"name": "hi", "command": "echo hi"}]}, os.path.join(home, "mcpstudio", "config.json"))
        self.assertEqual(self.run_cli("check", env=env).returncode, 0)
        with McpProcess("serve", env=env) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("hi", {})), "hi\n")

    def test_subcommand_names_as_commands(self):
        # `--` reaches a command named like a subcommand; options may come before the subcommand.
        bin_dir = os.path.join(self.dir, "bin")
        os.mkdir(bin_dir)
        self.script("bin/check", "#!/bin/sh\necho checked \"$@\"\n")
        env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"])
        with McpProcess("--", "check", "{x}", env=env) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("check", {"x": "it"})), "checked it\n")
        config = self.write_config({"tools": [{"name": "hi", "command": "echo hi"}]})
        with McpProcess("--debug", "serve", "--config", config, "--timeout", "5") as server:
            server.initialize()
            self.assertEqual(text_of(server.call("hi", {})), "hi\n")
        proc = self.run_cli("serve", "--config", config, "extra")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("options only", proc.stderr)

    def test_secrets_from_config_are_masked(self):
        # Values expanded from ${VAR} never reach --log in clear.
        log = os.path.join(self.dir, "wire.log")
        config = self.write_config({"environment": {"TOKEN": "${MCPS_TOKEN}"},
                                    "tools": [{"name": "t", "command": "sh -c 'echo $TOKEN'"}]})
        with self.serve(config, "--log", log, env=dict(os.environ, MCPS_TOKEN="tok-123456")) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("t", {})), "tok-123456\n")
            server.close()
        with open(log) as f:
            content = f.read()
        self.assertNotIn("tok-123456", content)
        self.assertIn("***", content)


# Frontmatter forms and what a YAML 1.2 parser (core schema) gives for each, checked against the
# `yaml` npm package (the one the conformance suite parses SKILL.md with) when Node is at hand.
FRONTMATTER_TABLE = [
    ("a: plain text here", {"a": "plain text here"}),
    ("a: 'single ''q'' x'", {"a": "single 'q' x"}),
    ('a: "dq \\t \\n \\\\ \\" \\x41 \\u00e9 \\U0001F600 \\/ \\_ \\N \\L \\P \\0 \\e \\ "',
     {"a": "dq \t \n \\ \" A \u00e9 \U0001F600 / \xa0 \x85 \u2028 \u2029 \x00 \x1b  "}),
    ("a: |\n  line1\n  line2\n\n  line4\nb: 1", {"a": "line1\nline2\n\nline4\n", "b": 1}),
    ("a: |-\n  line1\n  line2\n\nb: 1", {"a": "line1\nline2", "b": 1}),
    ("a: |+\n  line1\n  line2\n\n\nb: 1", {"a": "line1\nline2\n\n\n", "b": 1}),
    ("a: >\n  one\n  two\n\n  three\n    more\n  back\nb: x", {"a": "one two\nthree\n  more\nback\n", "b": "x"}),
    ("a: >-\n  Use when the user asks\n  about PDFs.\nb: MIT", {"a": "Use when the user asks about PDFs.", "b": "MIT"}),
    ("a: |2\n    indented\n  base", {"a": "  indented\nbase\n"}),
    ("a: |  # comment\n  t", {"a": "t\n"}),
    ("a: >\n\n  lead\n  x", {"a": "\nlead x\n"}),
    ("a: |\nb: 1", {"a": "", "b": 1}),
    ("a:\n  - x\n  - y", {"a": ["x", "y"]}),
    ("a:\n- x\n- y\nb: 2", {"a": ["x", "y"], "b": 2}),
    ("a: [x, 'y', \"z\", 1, true, null, [n], {k: v}]", {"a": ["x", "y", "z", 1, True, None, ["n"], {"k": "v"}]}),
    ("a: {k: v, 'q': 1, e: , f}", {"a": {"k": "v", "q": 1, "e": None, "f": None}}),
    ("a: [a,\n  b, # c\n  c,]", {"a": ["a", "b", "c"]}),
    ("m:\n  k1: v1\n  k2:\n    deep: 1\n  k3: [1,2]", {"m": {"k1": "v1", "k2": {"deep": 1}, "k3": [1, 2]}}),
    ("# c\na: b # trailing\n# another\nc: d#e", {"a": "b", "c": "d#e"}),
    ("a: 1\nb: -2\nc: +3\nd: 0o17\ne: 0x1F\nf: 1.5\ng: 1e3\nh: .5\ni: -1.25E-2\nj: 1.\nk: 0123",
     {"a": 1, "b": -2, "c": 3, "d": 15, "e": 31, "f": 1.5, "g": 1000.0, "h": 0.5, "i": -0.0125, "j": 1.0, "k": 123}),
    ("a: true\nb: True\nc: FALSE\nd: yes\ne: off\nf: null\ng: ~\nh:\ni: NULL\nj: 2024-01-01\nk: 1_000",
     {"a": True, "b": True, "c": False, "d": "yes", "e": "off", "f": None, "g": None, "h": None, "i": None,
      "j": "2024-01-01", "k": "1_000"}),
    ("description: This is a long\n  description over\n\n  lines\nname: x",
     {"description": "This is a long description over\nlines", "name": "x"}),
    ('d: "multi\n  line\n\n  quoted"', {"d": "multi line\nquoted"}),
    ('a: "esc \\\n   aped"', {"a": "esc aped"}),
    ("allowed-tools: Bash(git:*) Read\nurl: http://example.com/a#b", {"allowed-tools": "Bash(git:*) Read",
                                                                    "url": "http://example.com/a#b"}),
    ("l:\n  - a: 1\n    b: 2\n  - - n1\n    - n2\n  -\n    d: 4\n  - plain\n  -",
     {"l": [{"a": 1, "b": 2}, ["n1", "n2"], {"d": 4}, "plain", None]}),
    ("a:\n  - |\n    block in seq\n  - >-\n    folded\n    item", {"a": ["block in seq\n", "folded item"]}),
    ("'quoted key': 1\n\"k:x\": 2\na  : 3\n-a: -x", {"quoted key": 1, "k:x": 2, "a": 3, "-a": "-x"}),
    ("a:\n  b\n  c", {"a": "b c"}),
    ("a: [ ]\nb: {}\nc: ''\nd: \"\"\ne: '  kept  '\nf:    spaced    ", {"a": [], "b": {}, "c": "", "d": "", "e": "  kept  ",
                                                                     "f": "spaced"}),
    ("a: b:c\nb: [b:c, d]\nc: {b: [1, {c: d}]}", {"a": "b:c", "b": ["b:c", "d"], "c": {"b": [1, {"c": "d"}]}}),
    ("  a: 1\n  b: 2", {"a": 1, "b": 2}),
    ("a:\n  b:\n  c: 1", {"a": {"b": None, "c": 1}}),
]

# Frontmatter outside the subset (or outside YAML): refused with the line (the file's) and a reason.
FRONTMATTER_REFUSED = [
    ("a: .inf", 2, "no JSON value"),
    ("a: 1e400", 2, "too large"),
    ("a: 1\nb: &x 1", 3, "anchors"),
    ("a: *x", 2, "aliases"),
    ("a: !!str 1", 2, "tags"),
    ("? a\n: b", 2, "`?` keys"),
    ("a: [a: b]", 2, "{key: value}"),
    ("1: a", 2, "keys must be text"),
    ("a: b: c", 2, "quote the value"),
    ("a: b\na: c", 3, "appears twice"),
    ("a:\n\tb: c", 3, "tab"),
    ("a: \"x\" trailing", 2, "unexpected text"),
    ("a: - b", 2, "lines below"),
    ("a: '", 2, "no closing"),
    ("a: [1, 2", 2, "`,` or `]`"),
    ('a: "\\q"', 2, "unknown escape"),
    ("a: 1\n  b: 2", 3, "quote the value"),
    ("a:\n  b: 1\n c: 2", 4, "unexpected indentation"),
    ("a: >\n   \n  x", 4, "leading empty line"),
    ("a: @x", 2, "cannot start"),
    ("k: v\n...", 3, "key: value"),
    ("- a\n- b", 2, "`key: value` lines"),
]


class FrontmatterTests(unittest.TestCase):
    """The SKILL.md frontmatter parser: the YAML subset, in-process tables."""

    @staticmethod
    def parse(yaml_text):
        return mcpstudio.parse_frontmatter("---\n%s\n---\nbody\n" % yaml_text)

    def test_table(self):
        # Each form a frontmatter may use gives what a YAML 1.2 parser gives.
        for text, expected in FRONTMATTER_TABLE:
            with self.subTest(text=text):
                self.assertEqual(json.dumps(self.parse(text), sort_keys=True), json.dumps(expected, sort_keys=True))

    def test_refused(self):
        # Anything outside the subset is refused with the file's line and a reason: never a wrong value.
        for text, line, reason in FRONTMATTER_REFUSED:
            with self.subTest(text=text):
                with self.assertRaises(mcpstudio.FrontmatterError) as caught:
                    self.parse(text)
                self.assertEqual(caught.exception.line, line, str(caught.exception))
                self.assertIn(reason, str(caught.exception))

    def test_delimiters(self):
        # The frontmatter sits between a first `---` line and the next one (CRLF and a BOM allowed).
        self.assertEqual(mcpstudio.parse_frontmatter("\ufeff---\r\nname: x\r\n---  \r\nbody"), {"name": "x"})
        for text, reason in (("name: x\n", "must begin"), ("---\nname: x\n", "no closing"),
                             ("---\n---\n", "`key: value` lines")):
            with self.subTest(text=text), self.assertRaisesRegex(mcpstudio.FrontmatterError, reason):
                mcpstudio.parse_frontmatter(text)

    def test_same_as_the_yaml_package(self):
        # The table agrees with the `yaml` npm package (YAML 1.2, what the conformance suite uses), and that
        # package refuses or gives no JSON for what the parser refuses (but anchors, tags, `?` keys, `[a: b]`,
        # non-text keys, `...` and 1e400: valid YAML, outside the subset on purpose).
        node = os.environ.get("MCPSTUDIO_NODE22", "")
        modules = os.path.join(os.path.dirname(CONFORMANCE), "..", "..", "..")
        if not (node and os.path.isdir(os.path.join(modules, "yaml"))):
            self.skipTest("needs MCPSTUDIO_NODE22 and MCPSTUDIO_CONFORMANCE (its node_modules has `yaml`)")
        script = ("const {parse} = require('yaml'); let t = ''; process.stdin.on('data', d => t += d);"
                  "process.stdin.on('end', () => console.log(JSON.stringify(JSON.parse(t).map(d => {"
                  "try { return {ok: parse(d)} } catch (e) { return {error: e.message} } }))))")
        texts = [text for text, _ in FRONTMATTER_TABLE] + [text for text, _, _ in FRONTMATTER_REFUSED]
        out = subprocess.run([node, "-e", script], input=json.dumps(texts), capture_output=True, text=True,
                             timeout=60, env=dict(os.environ, NODE_PATH=os.path.abspath(modules)))
        answers = json.loads(out.stdout)
        for (text, expected), answer in zip(FRONTMATTER_TABLE, answers):
            with self.subTest(text=text):
                self.assertEqual(answer.get("ok"), json.loads(json.dumps(expected)))
        valid_but_outside = {"a: .inf", "a: 1e400", "a: 1\nb: &x 1", "a: !!str 1", "? a\n: b", "a: [a: b]", "1: a",
                             "k: v\n...", "- a\n- b"}
        for (text, _, _), answer in zip(FRONTMATTER_REFUSED, answers[len(FRONTMATTER_TABLE):]):
            with self.subTest(text=text):
                self.assertEqual("error" in answer, text not in valid_but_outside, answer)


def write_skill(root, path, frontmatter_text, body="Body.\n", files=None):
    """A skill folder at root/path: SKILL.md from the frontmatter text, plus {file path: bytes}."""
    folder = os.path.join(root, *path.split("/"))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "SKILL.md"), "w", newline="") as f:
        f.write("---\n%s\n---\n%s" % (frontmatter_text, body) if frontmatter_text is not None else body)
    for name, data in (files or {}).items():
        target = os.path.join(folder, *name.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)
    return folder


def skill_tree(root) -> dict:
    """Good skills (nested, binary files, every frontmatter form) and bad ones; {skill path: frontmatter}."""
    good = {}
    fm = ("name: forms\ndescription: >-\n  Every form\n  of frontmatter.\nlicense: 'Apache-2.0'\n"
          "allowed-tools: Bash(git:*) Read\ncompatibility: \"Python \\u2265 3.8\"\n"
          "metadata:\n  author: me # a comment\n  version: \"1.0\"\n  build: 7\n  ratio: 1.5\n  beta: true\n"
          "  none: ~\n  tags: [a, 'b c', {k: v}]\n  steps:\n    - one\n    - two: 2\n  notes: |\n    keep\n     this\n"
          "  folded: >+\n    kept\n\n  plain: this is\n    folded")
    write_skill(root, "forms", fm, files={"references/GUIDE.md": b"# Guide\n", "scripts/run.sh": b"#!/bin/sh\necho hi\n",
                                          "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binary\xff",
                                          "assets/data.bin": bytes(range(256)), ".secret": b"not served",
                                          ".git/config": b"not served", "crlf.txt": b"a\r\nb\r\n"})
    good["forms"] = {  # as the yaml npm package (YAML 1.2) gives it
        "name": "forms", "description": "Every form of frontmatter.", "license": "Apache-2.0",
        "allowed-tools": "Bash(git:*) Read", "compatibility": "Python \u2265 3.8",
        "metadata": {"author": "me", "version": "1.0", "build": 7, "ratio": 1.5, "beta": True, "none": None,
                     "tags": ["a", "b c", {"k": "v"}], "steps": ["one", {"two": 2}], "notes": "keep\n this\n",
                     "folded": "kept\n\n", "plain": "this is folded"}}
    write_skill(root, "acme/billing/refunds", "name: refunds\ndescription: Process refunds",
                files={"examples/email.md": "Grüße\n".encode()})
    good["acme/billing/refunds"] = {"name": "refunds", "description": "Process refunds"}
    write_skill(root, "outer", "name: outer\ndescription: Outer skill", files={"notes.md": b"outer notes\n"})
    write_skill(root, "outer/inner", "name: inner\ndescription: Nested skill", files={"x.txt": b"inner file\n"})
    good["outer"] = {"name": "outer", "description": "Outer skill"}
    good["outer/inner"] = {"name": "inner", "description": "Nested skill"}
    # The bad ones: each refused alone, named with its rule.
    write_skill(root, "no-frontmatter", None, body="# Just text\n")
    write_skill(root, "Bad_Name", "name: Bad_Name\ndescription: x")
    write_skill(root, "other-folder", "name: not-the-folder\ndescription: x")
    write_skill(root, "anchors", "name: anchors\ndescription: &d x\nother: *d")
    write_skill(root, "no-description", "name: no-description")
    write_skill(root, "too-many", "name: too-many\ndescription: x",
                files={"f%03d.txt" % i: b"x" for i in range(mcpstudio.SKILL_MAX_FILES)})
    write_skill(root, ".hidden-skill", "name: hidden-skill\ndescription: x")
    return good


BAD_SKILLS = {"no-frontmatter": "must begin with a `---` line", "Bad_Name": "naming rules",
              "other-folder": "differs from its folder", "anchors": "anchors are not supported",
              "no-description": "`description`", "too-many": "past the limits"}


class SkillsTests(ScratchDir):
    """Agent Skills served from folders (--skills DIR): the extension, resources, prompts, check."""

    def setUp(self):
        super().setUp()
        self.root = os.path.join(self.dir, "skills")
        self.good = skill_tree(self.root)
        outside = os.path.join(self.dir, "outside.txt")
        with open(outside, "w") as f:
            f.write("secret outside the root\n")
        os.symlink(outside, os.path.join(self.root, "forms", "link-out.txt"))
        os.symlink(os.path.join(self.root, "forms", "references", "GUIDE.md"),
                   os.path.join(self.root, "outer", "link-in.md"))
        os.mkfifo(os.path.join(self.dir, "fifo"))  # a read of it would hang: refusals must not open it
        os.symlink(os.path.join(self.dir, "fifo"), os.path.join(self.root, "forms", "fifo-out"))

    def read_bytes(self, server, uri) -> tuple:
        reply = server.request("resources/read", {"uri": uri})
        self.assertIn("result", reply, (uri, reply))
        content = reply["result"]["contents"][0]
        import base64
        data = content["text"].encode("utf-8") if "text" in content else base64.b64decode(content["blob"])
        return data, content

    def test_entries_match_the_files(self):
        # Every good skill is listed with its frontmatter verbatim and every file once, each digest and
        # size those of the bytes a read gives back; each bad skill is left out with one stderr line.
        import hashlib
        with McpProcess("--skills", self.root) as server:
            reply = server.initialize()
            self.assertEqual(reply["result"]["capabilities"]["extensions"],
                             {"io.modelcontextprotocol/skills": {"directoryRead": True}})
            self.assertIn("resources", reply["result"]["capabilities"])
            listing = server.request("skills/list", {})["result"]
            self.assertEqual((listing["ttlMs"], listing["cacheScope"]), (mcpstudio.SKILLS_TTL_MS, "public"))
            entries = {e["uri"][len("skill://"):-len("/SKILL.md")]: e for e in listing["skills"]}
            self.assertEqual(sorted(entries), sorted(self.good))
            for path, entry in entries.items():
                self.assertEqual(entry["frontmatter"], self.good[path])
                folder = os.path.join(self.root, *path.split("/"))
                on_disk = sorted("/".join(os.path.relpath(os.path.join(d, n), folder).split(os.sep))
                                 for d, dirs, names in os.walk(folder) if "/." not in d.replace(os.sep, "/")
                                 for n in names if not n.startswith(".") and n not in ("link-out.txt", "fifo-out"))
                listed = [r["uri"][len("skill://%s/" % path):] for r in entry["resources"]]
                self.assertEqual(listed[0], "SKILL.md")
                self.assertEqual(sorted(listed), on_disk)
                for resource in entry["resources"]:
                    data, content = self.read_bytes(server, resource["uri"])
                    self.assertEqual(resource["digest"], "sha256:" + hashlib.sha256(data).hexdigest())
                    self.assertEqual(resource["size"], len(data))
                    with open(os.path.join(folder, *resource["uri"][len("skill://%s/" % path):].split("/")), "rb") as f:
                        self.assertEqual(f.read(), data)
                self.assertEqual(server.request("skills/get", {"uri": entry["uri"]})["result"]["skill"], entry)
            self.assertIn("skill://outer/inner/x.txt", [r["uri"] for r in entries["outer"]["resources"]])
            self.assertIn("skill://forms/link-out.txt", str(server.request(
                "resources/read", {"uri": "skill://forms/link-out.txt"})))  # named in the refusal only
            _, png = self.read_bytes(server, "skill://forms/assets/logo.png")
            self.assertEqual((png["mimeType"], "blob" in png), ("image/png", True))
            _, md = self.read_bytes(server, "skill://forms/SKILL.md")
            self.assertEqual((md["mimeType"], md["name"], md["description"]),
                             ("text/markdown", "forms", "Every form of frontmatter."))
            stderr = server.stderr_when(lambda text: all(name in text for name in BAD_SKILLS))
        for name, rule in BAD_SKILLS.items():
            lines = [line for line in stderr.splitlines() if os.path.join(self.root, name, "SKILL.md") in line]
            self.assertEqual(len(lines), 1, stderr)
            self.assertIn(rule, lines[0])
            self.assertIn("not served", lines[0])

    def test_traversal_is_refused_and_reads_nothing(self):
        # `..`, percent-encoded traversal, absolute paths, dot-files, symlinks out of the root and unlisted
        # files are -32602; the FIFO behind a symlink would hang a read, so nothing was opened.
        refused = ["skill://forms/../outer/SKILL.md", "skill://forms/%2e%2e/outer/notes.md",
                   "skill://forms/..%2Fouter%2Fnotes.md", "skill://forms/references%2F..%2F..%2Fouter/notes.md",
                   "skill:///etc/passwd", "skill://forms//etc/passwd", "skill://forms/.secret",
                   "skill://forms/.git/config", "skill://forms/link-out.txt", "skill://forms/fifo-out",
                   "skill://forms/missing.md", "skill://Bad_Name/SKILL.md", "skill://forms/references/",
                   "skill://%2e%2e/outside.txt", "skill://forms/SKILL.md?x=1"]
        with McpProcess("--skills", self.root) as server:
            server.initialize()
            for uri in refused:
                for method in ("resources/read", "skills/get", "resources/directory/read"):
                    with self.subTest(uri=uri, method=method):
                        reply = server.request(method, {"uri": uri}, timeout=5)
                        self.assertEqual(reply.get("error", {}).get("code"), -32602, reply)
            data, _ = self.read_bytes(server, "skill://outer/link-in.md")  # a symlink inside the root is served
            self.assertEqual(data, b"# Guide\n")

    def test_edits_are_seen(self):
        # A file edited while serving gets a fresh digest and size at once; an added file is listed, and a
        # skill whose SKILL.md goes bad stops being served.
        import hashlib
        with McpProcess("--skills", self.root) as server:
            server.initialize()
            uri = "skill://outer/notes.md"
            before = server.request("skills/get", {"uri": "skill://outer/SKILL.md"})["result"]["skill"]
            with open(os.path.join(self.root, "outer", "notes.md"), "wb") as f:
                f.write(b"edited, and longer than before\n")
            with open(os.path.join(self.root, "outer", "new.md"), "wb") as f:
                f.write(b"new\n")
            after = server.request("skills/get", {"uri": "skill://outer/SKILL.md"})["result"]["skill"]
            digests = {r["uri"]: (r["digest"], r["size"]) for r in after["resources"]}
            data, _ = self.read_bytes(server, uri)
            self.assertEqual(digests[uri], ("sha256:" + hashlib.sha256(data).hexdigest(), len(data)))
            self.assertNotEqual(digests[uri], {r["uri"]: (r["digest"], r["size"]) for r in before["resources"]}[uri])
            self.assertIn("skill://outer/new.md", digests)
            write_skill(self.root, "outer", "name: outer\ndescription: [unclosed")
            reply = server.request("skills/get", {"uri": "skill://outer/SKILL.md"})
            self.assertEqual(reply["error"]["code"], -32602, reply)
            self.assertNotIn("skill://outer/SKILL.md", [e["uri"] for e in server.request("skills/list")["result"]["skills"]])

    def test_directory_read(self):
        # resources/directory/read lists direct children (folders as inode/directory); a file is -32602.
        with McpProcess("--skills", self.root) as server:
            server.initialize()
            root = server.request("resources/directory/read", {"uri": "skill://forms"})["result"]["resources"]
            kinds = {r["name"]: r["mimeType"] for r in root}
            self.assertEqual(kinds["references"], "inode/directory")
            self.assertEqual(kinds["SKILL.md"], "text/markdown")
            self.assertNotIn(".secret", kinds)
            self.assertNotIn(".git", kinds)
            assets = server.request("resources/directory/read", {"uri": "skill://forms/assets"})["result"]["resources"]
            self.assertEqual(sorted(r["uri"] for r in assets), ["skill://forms/assets/data.bin",
                                                                "skill://forms/assets/logo.png"])
            nested = server.request("resources/directory/read", {"uri": "skill://outer"})["result"]["resources"]
            self.assertIn({"uri": "skill://outer/inner", "name": "inner", "mimeType": "inode/directory"}, nested)
            reply = server.request("resources/directory/read", {"uri": "skill://forms/SKILL.md"})
            self.assertEqual(reply["error"]["code"], -32602)

    def test_clients_without_the_extension(self):
        # Every file is an ordinary resource in both eras, and each skill a prompt whose text is its SKILL.md
        # and says where its files are; --no-skill-prompts leaves the prompts out.
        with HttpServerProcess("--skills", self.root) as server:
            session = server.initialize_session()
            old = HttpServerProcess.messages(server.post({"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
                                                         session=session)[2])[0]["result"]["resources"]
            new = HttpServerProcess.messages(server.modern("resources/list")[2])[0]["result"]
            self.assertEqual(new["resultType"], "complete")
            self.assertEqual(old, new["resources"])
            uris = [r["uri"] for r in old]
            self.assertEqual(len(uris), len(set(uris)))  # a nested skill's files once
            for uri in ("skill://forms/assets/data.bin", "skill://outer/inner/SKILL.md", "skill://outer/notes.md"):
                self.assertIn(uri, uris)
            modern = HttpServerProcess.messages(server.modern("skills/list")[2])[0]["result"]
            self.assertEqual(len(modern["skills"]), len(self.good))
            prompts = HttpServerProcess.messages(server.post({"jsonrpc": "2.0", "id": 3, "method": "prompts/list"},
                                                             session=session)[2])[0]["result"]["prompts"]
            self.assertEqual(sorted(p["title"] for p in prompts), sorted(f["name"] for f in self.good.values()))
            name = next(p["name"] for p in prompts if p["title"] == "refunds")
            got = HttpServerProcess.messages(server.post({"jsonrpc": "2.0", "id": 4, "method": "prompts/get", "params": {
                "name": name}}, session=session)[2])[0]["result"]
            text = got["messages"][0]["content"]["text"]
            with open(os.path.join(self.root, "acme", "billing", "refunds", "SKILL.md")) as f:
                self.assertTrue(text.startswith(f.read()))
            self.assertIn("skill://acme/billing/refunds/examples/email.md", text)
        with McpProcess("--no-skill-prompts", "--skills", self.root) as server:
            self.assertNotIn("prompts", server.initialize()["result"]["capabilities"])

    def test_config_and_check(self):
        # The config key `skills` (relative to the file) serves the same skills; `check` lists each bad skill
        # and exits 1, and a folder of good skills checks clean.
        config = os.path.join(self.dir, "c.json")
        with open(config, "w") as f:
            json.dump({"skills": ["skills"], "skillPrompts": False}, f)
        with McpProcess("serve", "--config", config) as server:
            capabilities = server.initialize()["result"]["capabilities"]
            self.assertIn("extensions", capabilities)
            self.assertNotIn("prompts", capabilities)
            self.assertEqual(len(server.request("skills/list")["result"]["skills"]), len(self.good))
        out = subprocess.run(SERVER + ["check", "--config", config], capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        for name in BAD_SKILLS:
            self.assertIn("not served: %s" % os.path.join(self.root, name, "SKILL.md"), out.stdout)
        for path in self.good:
            self.assertIn(path, out.stdout)
        out = subprocess.run(SERVER + ["check", "--skills", os.path.join(HERE, "examples", "skills")],
                             capture_output=True, text=True, timeout=WAIT)
        self.assertEqual((out.returncode, out.stderr), (0, ""), out.stdout)
        self.assertIn("acme/billing/refunds", out.stdout)
        out = subprocess.run(SERVER + ["--skills", os.path.join(self.dir, "nope")], capture_output=True, text=True,
                             timeout=WAIT)
        self.assertEqual(out.returncode, 2)
        self.assertIn("--skills", out.stderr)


class SkillsToolingTests(ScratchDir):
    """`inspect` shows the skills and `install` writes an entry that serves them."""

    def test_inspect_and_install(self):
        # inspect lists each skill with its files, bytes and description (the skill files are not repeated among
        # the resources); install --client claude-code gives --skills an absolute path, and that entry serves.
        examples = os.path.join(HERE, "examples", "skills")
        out = subprocess.run(SERVER + ["inspect", "--skills", examples], capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("skills (3):", out.stdout)
        self.assertIn("skill://acme/billing/refunds  (2 files, ", out.stdout)
        self.assertNotIn("\nresources (", out.stdout)
        data = json.loads(subprocess.run(SERVER + ["inspect", "--json", "--skills", examples], capture_output=True,
                                         text=True, timeout=WAIT).stdout)
        self.assertEqual(len(data["skills"]), 3)
        relative = os.path.relpath(examples)
        out = subprocess.run(SERVER + ["install", "--client", "claude-code", "--skills", relative],
                             capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(out.returncode, 0, out.stderr)
        entry = next(iter(json.loads(out.stdout)["mcpServers"].values()))
        self.assertIn(os.path.abspath(examples), entry["args"])
        with McpProcess(cmd=[entry["command"]] + entry["args"], cwd=self.dir,
                        env=dict(os.environ, **entry.get("env", {}))) as server:
            server.initialize()
            self.assertEqual(len(server.request("skills/list")["result"]["skills"]), 3)


class SkillsInspectorTests(ScratchDir):
    """The MCP Inspector CLI's SEP-2640 verifier (`--verify`) over mcpstudio's skills, direct and aggregated."""

    def test_inspector_verifies_every_skill(self):
        # Every good skill of the tree (every frontmatter form, nested, binary files) passes the Inspector's
        # conformance, frontmatter and digest checks, from mcpstudio itself and through an aggregator.
        if not INSPECTOR:
            self.skipTest("needs MCPSTUDIO_INSPECTOR")
        root = os.path.join(self.dir, "skills")
        good = skill_tree(root)
        config = os.path.join(self.dir, "agg.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"team": {"command": PY, "args": SERVER[1:] + ["--skills", root]}}}, f)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        with McpProcess("serve", "--config", config, env=env) as server:  # lists the server once: it is cached
            server.initialize()
            server.request("tools/list")
            self.assertTrue(wait_until(lambda: any(n.startswith("server-") for _, _, names in
                                                   os.walk(env["XDG_CACHE_HOME"]) for n in names)))
        for mode in (["--skills", root], ["serve", "--config", config]):
            with self.subTest(mode=mode[0]):
                out = subprocess.run([INSPECTOR, "--cli", "-e", "XDG_CACHE_HOME=" + env["XDG_CACHE_HOME"], "--method",
                                      "skills/list", "--verify", "--"] + SERVER + mode,
                                     capture_output=True, text=True, timeout=120, env=env, stdin=subprocess.DEVNULL)
                self.assertEqual(out.returncode, 0, out.stdout[-2000:] + out.stderr[-2000:])
                reports = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
                self.assertEqual(len(reports), len(good), out.stdout[-2000:])
                self.assertTrue(all(r["outcome"] == "verified" and not r["conformance"] and not r["frontmatter"]
                                    for r in reports), out.stdout[-2000:])


class SkillsConformanceTests(ScratchDir):
    """The official suite's skills scenarios against `serve --config examples/configs/skills.json --http`."""

    def test_skills_scenarios(self):
        # Every check of sep-2640-skills-enumeration, -manifest and -directory is SUCCESS (no failure,
        # warning or skip), run as the suite runs them by default; so are those of the 2026-07-28 scenarios
        # that need resources (the echo server of ConformanceTests has none): caching hints on every list,
        # and -32602 with the URI for a resource that does not exist.
        if not (NODE22 and CONFORMANCE):
            self.skipTest("needs MCPSTUDIO_NODE22 and MCPSTUDIO_CONFORMANCE")
        config = os.path.join(HERE, "examples", "configs", "skills.json")
        with HttpServerProcess("serve", "--config", config) as server:
            url = "http://127.0.0.1:%d/mcp" % server.port
            for scenario in ("sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory",
                             "caching", "sep-2164-resource-not-found"):
                with self.subTest(scenario=scenario):
                    out = os.path.join(self.dir, scenario)
                    era = [] if scenario.startswith("sep-2640") else ["--spec-version", "2026-07-28"]  # skills: an extension
                    proc = subprocess.run([NODE22, CONFORMANCE, "server", "--url", url, "--scenario", scenario,
                                           "-o", out] + era,
                                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
                    found = [os.path.join(root, name) for root, _, names in os.walk(out)
                             for name in names if name == "checks.json"]
                    self.assertEqual(len(found), 1, proc.stdout[-2000:] + proc.stderr[-2000:])
                    with open(found[0]) as f:
                        checks = json.load(f)
                    self.assertEqual([(c["id"], c["status"]) for c in checks if c["status"] != "SUCCESS"], [])
                    self.assertGreaterEqual(len(checks), 4)


class SkillsAggregatorTests(ScratchDir):
    """An upstream mcpstudio's skills read through a second one: prefixed, routed, bytes and digests unchanged."""

    def setUp(self):
        super().setUp()
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        self.root = os.path.join(self.dir, "skills")
        self.good = skill_tree(self.root)
        self.log = os.path.join(self.dir, "upstream.log")

    def config(self, **extra) -> str:
        path = os.path.join(self.dir, "agg.json")
        with open(path, "w") as f:
            json.dump(dict({"mcpServers": {"team": {"command": PY, "args": SERVER[1:] + ["--skills", self.root,
                                                                            "--log", self.log]}}}, **extra), f)
        return path

    def upstream_asked(self, method) -> bool:
        with open(self.log) as f:
            return '"method":"%s"' % method in f.read().replace(" ", "")

    def test_skills_pass_through_unchanged(self):
        # Entries keep their frontmatter, digests and sizes under skill://team/...; reads, skills/get and
        # directory reads reach the upstream and give the same bytes; nothing is asked before the client asks.
        import base64
        import hashlib
        with McpProcess("--skills", self.root) as direct:
            direct.initialize()
            mine = {e["uri"]: e for e in direct.request("skills/list")["result"]["skills"]}
        with McpProcess("serve", "--config", self.config(), env=self.env) as server:
            server.initialize()
            server.request("tools/list")  # starts the upstream and lists it (its tools, resources, prompts)
            self.assertTrue(wait_until(lambda: os.path.exists(self.log) and self.upstream_asked("tools/list")))
            self.assertFalse(self.upstream_asked("skills/list") or self.upstream_asked("resources/read"))
            listed = server.request("skills/list")["result"]["skills"]
            self.assertEqual(len(listed), len(mine))
            for entry in listed:
                self.assertTrue(entry["uri"].startswith("skill://team/"), entry["uri"])
                original = mine["skill://" + entry["uri"][len("skill://team/"):]]
                self.assertEqual(entry["frontmatter"], original["frontmatter"])
                self.assertEqual([(r["uri"], r["digest"], r["size"]) for r in entry["resources"]],
                                 [("skill://team/" + r["uri"][8:], r["digest"], r["size"]) for r in original["resources"]])
                self.assertEqual(server.request("skills/get", {"uri": entry["uri"]})["result"]["skill"], entry)
                for resource in entry["resources"]:
                    content = server.request("resources/read", {"uri": resource["uri"]})["result"]["contents"][0]
                    self.assertEqual(content["uri"], resource["uri"])
                    data = content["text"].encode() if "text" in content else base64.b64decode(content["blob"])
                    self.assertEqual(("sha256:" + hashlib.sha256(data).hexdigest(), len(data)),
                                     (resource["digest"], resource["size"]))
            children = server.request("resources/directory/read", {"uri": "skill://team/forms"})["result"]["resources"]
            self.assertIn({"uri": "skill://team/forms/references", "name": "references", "mimeType": "inode/directory"},
                          children)
            uris = [r["uri"] for r in server.request("resources/list")["result"]["resources"]]
            self.assertIn("skill://team/forms/assets/logo.png", uris)
            for uri in ("skill://team/forms/../outer/SKILL.md", "skill://team/forms/%2e%2e/outer/SKILL.md",
                        "skill://team/no-such/SKILL.md", "skill://team/forms/.secret"):
                with self.subTest(uri=uri):
                    self.assertEqual(server.request("resources/read", {"uri": uri})["error"]["code"], -32602)
        with McpProcess("serve", "--config", self.config(), env=self.env) as server:  # the listing is cached now
            capabilities = server.initialize()["result"]["capabilities"]
            self.assertEqual(capabilities["extensions"], {"io.modelcontextprotocol/skills": {"directoryRead": True}})

    def test_namespaces_filter_skills(self):
        # A namespace's deny pattern leaves a skill out of the listing, and its files cannot be read.
        config = self.config(namespaces={"work": {"servers": ["team"], "tools": {"deny": ["team__refunds"]}}})
        with McpProcess("serve", "--config", config, env=self.env) as server:
            server.initialize()
            uris = [e["uri"] for e in server.request("skills/list")["result"]["skills"]]
            self.assertIn("skill://team/forms/SKILL.md", uris)
            self.assertNotIn("skill://team/acme/billing/refunds/SKILL.md", uris)
            for method in ("resources/read", "skills/get"):
                reply = server.request(method, {"uri": "skill://team/acme/billing/refunds/SKILL.md"})
                self.assertEqual(reply["error"]["code"], -32602, reply)


class McpdSamplesTests(ScratchDir):
    """mcpd's own sample scripts, as written for mcpd, give the results mcpd gives (issue 13)."""

    def setUp(self):
        super().setUp()
        self.root = os.path.join(self.dir, "samples")
        os.makedirs(os.path.join(self.root, "basic"))
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))

    def sample(self, rel, body):
        path = os.path.join(self.root, rel)
        with open(path, "w") as f:
            f.write(textwrap.dedent(body))
        os.chmod(path, 0o755)

    def serve(self, *extra):
        return McpProcess("--root-directory", self.root, *extra, env=self.env)

    def test_samples_read_options_by_their_own_names(self):
        # greet (bash, $name), add-numbers (bash, $a $b, exit 2 when one is missing) and a Python
        # calculator (os.environ["a"]) answer as under mcpd: "Hello, Ada!", 2+3=5, 6*7=42.
        self.sample("greet", """\
            #!/usr/bin/env bash
            if [ "$1" = "--help" ]; then
              echo '{"description": "Greet someone by name"}'
              echo '{"name": {"description": "Name to greet", "required": true, "value_type": "string"}}' >&2
              exit 0
            fi
            echo "Hello, $name!"
            """)
        self.sample("basic/add-numbers", """\
            #!/usr/bin/env bash
            if [ "$1" = "--help" ]; then
              echo '{"description": "Add two integers", "version": "1.0"}'
              echo '{"a": {"required": true, "value_type": "integer"}, "b": {"required": true, "value_type": "integer"}}' >&2
              exit 0
            fi
            if [ -z "$a" ] || [ -z "$b" ]; then
              echo "ERROR both a and b are needed" >&2
              exit 2
            fi
            echo "{\\"sum\\": $((a + b))}"
            """)
        self.sample("calculator.py", """\
            #!%s
            import json, os, sys
            if len(sys.argv) > 1 and sys.argv[1] == "--help":
                print(json.dumps({"description": "Calculator", "version": "1.0.0"}))
                print(json.dumps({
                    "operation": {"required": True, "value_type": {"enum": ["add", "subtract", "multiply", "divide"]}},
                    "a": {"required": True, "value_type": "float"},
                    "b": {"required": True, "value_type": "float"}}), file=sys.stderr)
                sys.exit(0)
            a, b = float(os.environ.get("a", 0)), float(os.environ.get("b", 0))
            op = os.environ["operation"]
            result = {"add": a + b, "subtract": a - b, "multiply": a * b, "divide": a / b if b else None}[op]
            print(json.dumps({"result": result}))
            """ % PY)
        with self.serve() as server:
            server.initialize()
            self.assertTrue(wait_until(lambda: len(server.request("tools/list")["result"]["tools"]) == 3),
                            server.context())
            greet = server.call("greet", {"name": "Ada"})
            self.assertEqual(greet, {"content": [{"type": "text", "text": "Hello, Ada!\n"}], "isError": False})
            added = server.call("basic__add-numbers", {"a": 2, "b": 3})
            self.assertFalse(added["isError"], added)
            self.assertEqual(added["structuredContent"], {"sum": 5})
            product = server.call("calculator", {"operation": "multiply", "a": 6, "b": 7})
            self.assertFalse(product["isError"], product)
            self.assertEqual(product["structuredContent"], {"result": 42.0})
            # MCPD_OPT_<name> and the stdin JSON still carry every option.
            self.assertEqual(server.call("calculator", {"operation": "add", "a": 0.5, "b": 1})["structuredContent"],
                             {"result": 1.5})

    def test_protected_and_invalid_names_only_as_mcpd_opt(self):
        # Options named PATH, LD_PRELOAD, PYTHONPATH, BASH_ENV, path (zsh's PATH) or max-count are
        # not set under their own names (the script still finds `env` on the real PATH and
        # Python starts clean); they arrive as MCPD_OPT_<name> and on stdin; `who` is set, unless
        # the operator set `who` with --env.
        names = ["PATH", "LD_PRELOAD", "PYTHONPATH", "BASH_ENV", "path", "max-count", "who"]
        self.sample("probe", """\
            #!%s
            import json, os, sys
            if sys.argv[1:] == ["--help"]:
                print("{}")
                print(json.dumps({n: {"required": True, "value_type": "string"} for n in %r}), file=sys.stderr)
                sys.exit(0)
            print(json.dumps({"own": {n: os.environ.get(n) for n in %r},
                              "opt": {n: os.environ.get("MCPD_OPT_" + n) for n in %r},
                              "stdin": json.load(sys.stdin)}))
            """ % (PY, names, names, names))
        with self.serve("--env", "who=set-by-operator") as server:
            server.initialize()
            self.assertTrue(wait_until(lambda: server.request("tools/list")["result"]["tools"]), server.context())
            self.assertEqual(server.call("probe", {n: "v" for n in names})["structuredContent"]["own"]["who"],
                             "set-by-operator")  # a variable given with --env is the operator's, not the model's
        with self.serve() as server:
            server.initialize()
            self.assertTrue(wait_until(lambda: server.request("tools/list")["result"]["tools"]), server.context())
            arguments = {n: "/tmp/evil-" + n for n in names}
            result = server.call("probe", arguments)
            self.assertFalse(result["isError"], result)
            data = result["structuredContent"]
            self.assertEqual(data["opt"], arguments)
            self.assertEqual(data["stdin"], arguments)
            self.assertEqual(data["own"]["who"], "/tmp/evil-who")
            self.assertEqual(data["own"]["PATH"], os.environ.get("PATH"))
            for name in ("LD_PRELOAD", "PYTHONPATH", "BASH_ENV", "path", "max-count"):
                self.assertEqual(data["own"][name], os.environ.get(name), name)

    def test_option_variable_rule(self):
        # The rule itself, table-driven: portable names are set, protected ones never.
        import mcpstudio
        for name, expected in (("name", True), ("a", True), ("_x1", True), ("user", True), ("max-count", False),
                               ("1a", False), ("a.b", False), ("PATH", False), ("HOME", False), ("IFS", False),
                               ("LD_PRELOAD", False), ("DYLD_INSERT_LIBRARIES", False), ("PYTHONSTARTUP", False),
                               ("NODE_OPTIONS", False), ("PERL5OPT", False), ("RUBYOPT", False), ("ENV", False),
                               ("BASH_ENV", False), ("SHELL", False), ("GIT_SSH_COMMAND", False),
                               ("MCPD_OPT_x", False), ("path", False)):
            self.assertEqual(mcpstudio.option_variable(name), expected, name)


class CliAsMcpConfigsTests(ScratchDir):
    """CLI-as-MCP's example configs (configs/git.json, npm.json, claude-cli.json) serve unchanged (issue 13)."""

    def setUp(self):
        super().setUp()
        self.bin = os.path.join(self.dir, "bin")
        os.mkdir(self.bin)
        self.env = dict(os.environ, PATH=self.bin + os.pathsep + os.environ.get("PATH", ""),
                        GIT_AUTHOR_NAME="Ada", GIT_AUTHOR_EMAIL="ada@example.com",
                        GIT_COMMITTER_NAME="Ada", GIT_COMMITTER_EMAIL="ada@example.com",
                        GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")

    def fake(self, name):
        """A stand-in for a command that is missing here: prints its name and argv as JSON."""
        path = os.path.join(self.bin, name)
        with open(path, "w") as f:
            f.write("#!%s\nimport json, sys\nprint(json.dumps([%r] + sys.argv[1:]))\n" % (PY, name))
        os.chmod(path, 0o755)

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(data, f, indent=2)
        return path

    @staticmethod
    def tool(name, description, parameters, template, timeout):
        return {"name": name, "description": description, "parameters": parameters,
                "command_template": template, "output_format": "text", "timeout": timeout}

    def serve(self, config):
        return McpProcess("serve", "--config", config, env=self.env, cwd=self.dir)

    def test_git_json(self):
        # configs/git.json: status, log -n {limit} (default 10), diff{#if file}, commit -m '{message}',
        # branch{#if name}, and the git://status and git://log resources, run against a real repository.
        git = shutil.which("git", path=self.env["PATH"])
        self.assertIsNotNone(git, "git is needed for this test")
        subprocess.run(["git", "init", "-q", self.dir], check=True, env=self.env, timeout=WAIT)
        with open(os.path.join(self.dir, "notes.txt"), "w") as f:
            f.write("one\n")
        subprocess.run(["git", "add", "notes.txt"], cwd=self.dir, check=True, env=self.env, timeout=WAIT)
        config = self.write("git.json", {
            "name": "git-mcp", "command": "git", "description": "Git CLI as MCP server", "environment": {},
            "tools": [
                self.tool("git_status", "Get the current git repository status", {}, "git status", 10),
                self.tool("git_log", "View git commit history",
                          {"limit": {"type": "integer", "description": "Number of commits to show", "default": 10}},
                          "git log -n {limit} --oneline", 10),
                self.tool("git_diff", "Show changes in the working directory",
                          {"file": {"type": "string", "description": "Specific file to diff (optional)",
                                    "required": False}}, "git diff{#if file} {file}{/if}", 15),
                self.tool("git_commit", "Create a git commit",
                          {"message": {"type": "string", "description": "Commit message", "required": True}},
                          "git commit -m '{message}'", 10),
                self.tool("git_branch", "List or create branches",
                          {"name": {"type": "string", "description": "Branch name to create (optional)",
                                    "required": False}}, "git branch{#if name} {name}{/if}", 10)],
            "resources": [
                {"uri": "git://status", "name": "Git Status", "description": "Current git repository status",
                 "command": "git status", "mime_type": "text/plain"},
                {"uri": "git://log", "name": "Git Log", "description": "Recent commit history",
                 "command": "git log -n 20 --pretty=format:'%h - %an, %ar : %s'", "mime_type": "text/plain"}],
            "working_directory": "."})
        with self.serve(config) as server:
            server.initialize()
            tools = {t["name"]: t for t in server.request("tools/list")["result"]["tools"]}
            self.assertEqual(sorted(tools), ["git_branch", "git_commit", "git_diff", "git_log", "git_status"])
            self.assertIn("notes.txt", text_of(server.call("git_status", {})))
            committed = server.call("git_commit", {"message": "first: it's here; $(no shell)"})
            self.assertFalse(committed["isError"], committed)
            log = server.call("git_log", {})
            self.assertFalse(log["isError"], log)
            self.assertIn("first: it's here; $(no shell)", text_of(log))
            with open(os.path.join(self.dir, "notes.txt"), "a") as f:
                f.write("two\n")
            self.assertIn("+two", text_of(server.call("git_diff", {"file": "notes.txt"})))
            self.assertIn("+two", text_of(server.call("git_diff", {})))
            self.assertFalse(server.call("git_branch", {"name": "feature-x"})["isError"])
            self.assertIn("feature-x", text_of(server.call("git_branch", {})))
            read = server.request("resources/read", {"uri": "git://log"})["result"]["contents"][0]
            self.assertEqual(read["mimeType"], "text/plain")
            self.assertRegex(read["text"], r"^[0-9a-f]+ - Ada, .* : first: it's here")
            self.assertEqual("".join(server.stderr).count("only a shell"), 0, server.context())

    def test_npm_json(self):
        # configs/npm.json against a stand-in npm: {#if dev} --save-dev, --depth={depth} with its default 0,
        # and the npm://package-json resource reading package.json from working_directory ".".
        self.fake("npm")
        with open(os.path.join(self.dir, "package.json"), "w") as f:
            f.write('{"name": "demo", "version": "1.0.0"}\n')
        config = self.write("npm.json", {
            "name": "npm-mcp", "command": "npm", "description": "NPM CLI as MCP server", "environment": {},
            "tools": [
                self.tool("npm_install", "Install an npm package",
                          {"package": {"type": "string", "description": "Package name (with optional version, "
                                       "e.g., 'express@4.18.0')", "required": True},
                           "dev": {"type": "boolean", "description": "Install as dev dependency", "default": False}},
                          "npm install {package}{#if dev} --save-dev{/if}", 120),
                self.tool("npm_uninstall", "Uninstall an npm package",
                          {"package": {"type": "string", "description": "Package name to uninstall", "required": True}},
                          "npm uninstall {package}", 30),
                self.tool("npm_run", "Run an npm script",
                          {"script": {"type": "string", "description": "Script name from package.json",
                                      "required": True}}, "npm run {script}", 300),
                self.tool("npm_list", "List installed packages",
                          {"depth": {"type": "integer", "description": "Depth of dependency tree to show",
                                     "default": 0}}, "npm list --depth={depth}", 30),
                self.tool("npm_outdated", "Check for outdated packages", {}, "npm outdated", 30)],
            "resources": [{"uri": "npm://package-json", "name": "Package.json",
                           "description": "Current package.json contents", "command": "cat package.json",
                           "mime_type": "application/json"}],
            "working_directory": "."})
        with self.serve(config) as server:
            server.initialize()
            tools = {t["name"]: t for t in server.request("tools/list")["result"]["tools"]}
            self.assertEqual(len(tools), 5)
            self.assertEqual(tools["npm_install"]["inputSchema"]["required"], ["package"])
            runs = [("npm_install", {"package": "express@4.18.0"}, ["npm", "install", "express@4.18.0"]),
                    ("npm_install", {"package": "jest", "dev": True}, ["npm", "install", "jest", "--save-dev"]),
                    ("npm_uninstall", {"package": "jest"}, ["npm", "uninstall", "jest"]),
                    ("npm_run", {"script": "build"}, ["npm", "run", "build"]),
                    ("npm_list", {}, ["npm", "list", "--depth=0"]),
                    ("npm_list", {"depth": 2}, ["npm", "list", "--depth=2"]),
                    ("npm_outdated", {}, ["npm", "outdated"])]
            for name, arguments, argv in runs:
                result = server.call(name, arguments)
                self.assertFalse(result["isError"], result)
                self.assertEqual(json.loads(text_of(result)), argv)
                self.assertNotIn("structuredContent", result)  # "output_format": "text"
            read = server.request("resources/read", {"uri": "npm://package-json"})["result"]["contents"][0]
            self.assertEqual((read["mimeType"], json.loads(read["text"])["name"]), ("application/json", "demo"))

    def test_claude_cli_json_and_shell_warnings(self):
        # configs/claude-cli.json against a stand-in claude: run_task and run_prompt run; search_codebase
        # (`echo '...' | claude`) and the latest-report resource (`cat .../*.md | head`) need a shell they
        # do not ask for, so startup and `check` warn on stderr, naming each and suggesting the fix.
        self.fake("claude")
        config = self.write("claude-cli.json", {
            "name": "claude-cli", "command": "claude", "description": "Claude Code CLI as MCP server",
            "environment": {},
            "tools": [
                self.tool("run_task", "Execute a Claude CLI task from a markdown file",
                          {"task_path": {"type": "string", "description": "Path to the task markdown file "
                                         "(relative or absolute)", "required": True}},
                          'claude --dangerously-skip-permissions "prompt path {task_path}"', 300),
                self.tool("run_prompt", "Execute a Claude CLI prompt directly",
                          {"prompt": {"type": "string", "description": "The prompt to execute", "required": True}},
                          'claude --dangerously-skip-permissions "{prompt}"', 180),
                self.tool("search_codebase", "Search the codebase for a topic and generate a report",
                          {"topic": {"type": "string", "description": "Topic to search for", "required": True},
                           "report_path": {"type": "string", "description": "Path where the report should be saved",
                                           "default": ".claude-tasks/reports/latest/search-report.md"}},
                          "echo '/tr:withScout\\n\\n# Search for {topic}\\n\\nFind all code related to {topic} "
                          "and create report at:\\n`{report_path}`' | claude --dangerously-skip-permissions", 300)],
            "resources": [{"uri": "claude://latest-report", "name": "Latest Report",
                           "description": "The most recent Claude task report",
                           "command": "cat .claude-tasks/reports/latest/*.md | head -n 1000",
                           "mime_type": "text/markdown"}],
            "working_directory": "."})
        with self.serve(config) as server:
            server.initialize()
            names = [t["name"] for t in server.request("tools/list")["result"]["tools"]]
            self.assertEqual(names, ["run_task", "run_prompt", "search_codebase"])
            self.assertEqual(json.loads(text_of(server.call("run_task", {"task_path": "t.md"}))),
                             ["claude", "--dangerously-skip-permissions", "prompt path t.md"])
            self.assertEqual(json.loads(text_of(server.call("run_prompt", {"prompt": "say \"hi\"; exit"}))),
                             ["claude", "--dangerously-skip-permissions", 'say "hi"; exit'])
            stderr = server.stderr_when(lambda text: text.count("only a shell") >= 2)
        for text in (stderr, self.check(config)):
            warnings = [line for line in text.splitlines() if "only a shell" in line]
            self.assertEqual(len(warnings), 2, text)
            self.assertIn("tools[2] `search_codebase`", warnings[0])
            self.assertIn("`|`", warnings[0])
            self.assertIn('Add "shell": true', warnings[0])
            self.assertIn("resources[0] `claude://latest-report`", warnings[1])
            self.assertIn("`*`, `|`", warnings[1])
            self.assertIn("sh -c", warnings[1])
        # With "shell": true the same tool runs its pipe, and nothing is said.
        with open(config) as f:
            data = json.load(f)
        data["tools"][2]["shell"] = True
        del data["resources"]
        with open(config, "w") as f:
            json.dump(data, f)
        self.assertNotIn("only a shell", self.check(config))
        with self.serve(config) as server:
            server.initialize()
            result = server.call("search_codebase", {"topic": "auth"})
            self.assertEqual(json.loads(text_of(result)), ["claude", "--dangerously-skip-permissions"])

    def test_files_written_by_cli_as_mcp(self):
        # `cli-as-mcp init` writes every unset key as null (working_directory, a parameter's default);
        # such a file, with a tool added as its to_file() writes one, serves as written.
        config = self.write("init.json", {
            "name": "echoer", "command": "echo", "description": "echoer as MCP server", "environment": {},
            "tools": [{"name": "say_hello", "description": "Say hello to someone",
                       "parameters": {"name": {"type": "string", "description": "Name to greet", "default": None,
                                               "required": True}},
                       "command_template": "echo 'Hello, {name}!'", "output_format": "text", "timeout": 30}],
            "resources": [], "working_directory": None})
        self.assertIn("say_hello", self.check_stdout(config))
        with self.serve(config) as server:
            server.initialize()
            tool = server.request("tools/list")["result"]["tools"][0]
            self.assertEqual(tool["inputSchema"]["required"], ["name"])
            self.assertEqual(text_of(server.call("say_hello", {"name": "Alice"})), "Hello, Alice!\n")

    def check_stdout(self, config) -> str:
        proc = subprocess.run(SERVER + ["check", "--config", config], capture_output=True, text=True,
                              timeout=WAIT, env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout

    def check(self, config) -> str:
        proc = subprocess.run(SERVER + ["check", "--config", config], capture_output=True, text=True,
                              timeout=WAIT, env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stderr

    def test_output_format(self):
        # "json" parses stdout into structuredContent (an object as is, anything else under "result");
        # stdout that is not JSON is an error saying so; an unknown format or a misspelled key is a
        # startup error naming the key.
        script = os.path.join(self.dir, "out.py")
        with open(script, "w") as f:
            f.write("import sys\nprint(sys.argv[1])\n")
        config = self.write("fmt.json", {"tools": [
            {"name": "as_json", "parameters": {"out": {"type": "string"}},
             "command_template": "%s %s {out}" % (PY, script), "output_format": "json"},
            {"name": "as_text", "command_template": "%s %s {out}" % (PY, script), "output_format": "text",
             "parameters": {"out": {"type": "string"}}}]})
        with self.serve(config) as server:
            server.initialize()
            obj = server.call("as_json", {"out": '{"files": 3}'})
            self.assertFalse(obj["isError"], obj)
            self.assertEqual(obj["structuredContent"], {"files": 3})
            self.assertEqual(text_of(obj), '{"files": 3}\n')
            self.assertEqual(server.call("as_json", {"out": "[1, 2]"})["structuredContent"], {"result": [1, 2]})
            bad = server.call("as_json", {"out": "not json"})
            self.assertTrue(bad["isError"])
            self.assertIn('`as_json` declares "output_format": "json" but its output is not JSON', text_of(bad))
            self.assertIn("not json", text_of(bad))
            self.assertNotIn("structuredContent", server.call("as_text", {"out": '{"files": 3}'}))
        for key, value, expected in (("output_format", "yaml", 'tools[0].output_format: expected "text" or "json"'),
                                     ("output_fromat", "json", "did you mean `output_format`")):
            path = self.write("bad.json", {"tools": [{"name": "t", "command": "echo", key: value}]})
            proc = subprocess.run(SERVER + ["serve", "--config", path], capture_output=True, text=True,
                                  timeout=WAIT, env=self.env, stdin=subprocess.DEVNULL)
            self.assertEqual(proc.returncode, 1)
            self.assertIn(expected, proc.stderr)


class McpStudioConfigTests(ScratchDir):
    """mcp-studio's own config file (as mcpmu writes it today) is an aggregator config (issue 13)."""

    def setUp(self):
        super().setUp()
        self.fake = self.script("fake_mcp.py", FAKE_SERVER, executable=False)
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"), MCPS_TEST_KEY="key-4711",
                        MCPS_TEST_TOKEN="tok-0815")
        self.env.pop("FAKE_ONLY", None)

    def server(self, name, *extra, **keys):
        return dict({"kind": "stdio", "command": PY, "args": [self.fake, "--name", name] + list(extra)}, **keys)

    def config(self):
        return {
            "schemaVersion": 1,
            "lastModified": "2026-11-20T09:14:07.123456Z",
            "daemonMode": {"enabled": False, "socketPath": "/tmp/mcpmu.sock"},
            "metrics": {"enabled": True, "retentionDays": 7},
            "defaultNamespace": "personal",
            "servers": {
                "files": self.server("files", "--task-support", enabled=True, cwd=self.dir, env={"FAKE_X": "from-env"},
                                     startup_timeout_sec=10, tool_timeout_sec=30, deniedTools=["crash"]),
                "notes": self.server("notes"),
                "old": self.server("old", enabled=False),
                "remote": {"kind": "streamable_http", "enabled": False, "url": "http://127.0.0.1:9/mcp",
                           "http_headers": {"X-Team": "blue"}, "env_http_headers": {"X-Api-Key": "MCPS_TEST_KEY"},
                           "bearer_token_env_var": "MCPS_TEST_TOKEN", "startup_timeout_sec": 5}},
            "namespaces": {
                "work": {"description": "Work tools", "serverIds": ["files", "notes", "old", "remote"],
                         "denyByDefault": False, "serverDefaults": {"notes": True}},
                "personal": {"serverIds": ["notes"]}},
            "toolPermissions": [
                {"namespace": "work", "server": "notes", "toolName": "echo", "enabled": True},
                {"namespace": "work", "server": "files", "toolName": "sleep", "enabled": False}]}

    def write(self, data):
        folder = os.path.join(self.dir, "mcp-studio")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "config.json")
        with open(path, "w") as f:
            json.dump(data, f, indent=2)
        return path

    def test_seed_client_line_serves_the_namespace(self):
        # `serve --stdio --config ~/.config/mcp-studio/config.json --namespace work`, the seeds' client line,
        # with HOME pointing at the scratch folder: the work namespace's servers, minus what deniedTools,
        # toolPermissions and serverDefaults deny; denied tools answer -32006 naming the rule.
        self.write(self.config())
        os.makedirs(os.path.join(self.dir, ".config"), exist_ok=True)
        os.rename(os.path.join(self.dir, "mcp-studio"), os.path.join(self.dir, ".config", "mcp-studio"))
        env = dict(self.env, HOME=self.dir)
        with McpProcess("serve", "--stdio", "--config", "~/.config/mcp-studio/config.json", "--namespace", "work",
                        "--no-manager-tools", env=env) as server:
            server.initialize()
            tools = {t["name"]: t for t in server.request("tools/list")["result"]["tools"]}
            self.assertEqual(sorted(tools), ["files__dotted_name_x", "files__echo", "files__env", "notes__echo"],
                             server.context())
            self.assertEqual(tools["files__echo"]["execution"], {"taskSupport": "optional"})  # as mcpstudio's task
            self.assertEqual(text_of(server.call("notes__echo", {"text": "hi"})), "notes: hi")
            self.assertEqual(text_of(server.call("files__env", {"name": "FAKE_X"})), "from-env")
            for name, why in (("files__crash", "deniedTools of server `files`"),
                              ("files__sleep", "toolPermissions disables the tool `sleep` of server `files` in "
                                               "namespace `work`"),
                              ("notes__sleep", "namespace `work` denies the tools of server `notes`")):
                error = server.request("tools/call", {"name": name, "arguments": {}})["error"]
                self.assertEqual(error["code"], -32006, error)
                self.assertIn(why, error["message"])
            self.assertEqual(server.request("tools/call", {"name": "nothing__here", "arguments": {}})["error"]["code"],
                             -32602)

    def test_default_namespace_and_bookkeeping(self):
        # Without --namespace, defaultNamespace (personal: notes only, nothing denied) is served;
        # schemaVersion, lastModified, daemonMode and metrics are accepted.
        path = self.write(self.config())
        with McpProcess("serve", "--stdio", "--config", path, "--no-manager-tools", env=self.env) as server:
            server.initialize()
            names = [t["name"] for t in server.request("tools/list")["result"]["tools"]]
            self.assertEqual(names, ["notes__echo", "notes__sleep", "notes__crash", "notes__env",
                                     "notes__dotted_name_x"])
            self.assertEqual(text_of(server.call("notes__sleep", {"seconds": 0})), "slept")

    def test_server_entries_read(self):
        # In-process: each mcp-studio server key lands where mcpstudio keeps it.
        import mcpstudio
        path = self.write(self.config())
        loader = mcpstudio.ConfigLoader(path, environ=self.env)
        plan = mcpstudio.read_upstreams(loader, loader.read(), None)
        specs = {spec.key: spec for spec in plan.specs}
        self.assertEqual((specs["files"].startup_timeout, specs["files"].tool_timeout), (10.0, 30.0))
        self.assertEqual(specs["files"].denied_tools, ["crash"])
        self.assertEqual((specs["old"].disabled, specs["files"].disabled, specs["notes"].disabled), (True, False, False))
        remote = specs["remote"]
        self.assertEqual((remote.transport, remote.url, remote.startup_timeout), ("http", "http://127.0.0.1:9/mcp", 5.0))
        self.assertEqual(remote.headers, {"X-Team": "blue", "X-Api-Key": "key-4711", "Authorization": "Bearer tok-0815"})
        self.assertIsNone(remote.error)
        self.assertEqual(plan.namespaces["work"]["server_defaults"], {"notes": True})
        self.assertEqual(plan.permissions, {("work", "notes", "echo"): True, ("work", "files", "sleep"): False})
        self.assertEqual(plan.default, "personal")

    def test_readme_example_loads(self):
        # The mcp-studio config shown in the README passes `check`: both servers usable, both namespaces.
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            block = [b.split("```", 1)[0] for b in f.read().split("```jsonc\n")[1:] if '"schemaVersion"' in b][0]
        path = os.path.join(self.dir, "config.json")
        with open(path, "w") as f:
            f.write(block)
        env = dict(self.env, SEARCH_KEY="k-1", SEARCH_TOKEN="t-2")
        proc = subprocess.run(SERVER + ["check", "--config", path, "--namespace", "work"], capture_output=True,
                              text=True, timeout=WAIT, env=env)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for fragment in ("files", "search", "work", "personal"):
            self.assertIn(fragment, proc.stdout)
        self.assertNotIn("k-1", proc.stdout + proc.stderr)  # header values are secrets

    def test_streamable_http_server_with_bearer_token_env_var(self):
        # A `kind: streamable_http` entry sends the token named by bearer_token_env_var (and its
        # env_http_headers): an mcpstudio --http upstream that requires the token serves the call;
        # with the wrong token in that variable the upstream refuses it: no tools, and an error.
        for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
            self.env.pop(name, None)
        with HttpServerProcess("echo", "{message}", env=dict(os.environ, MCPSTUDIO_HTTP_TOKEN="tok-0815")) as web:
            data = {"schemaVersion": 1, "servers": {"web": {
                "kind": "streamable_http", "url": "http://127.0.0.1:%d/mcp" % web.port,
                "bearer_token_env_var": "MCPS_TEST_TOKEN", "env_http_headers": {"X-Api-Key": "MCPS_TEST_KEY"},
                "startup_timeout_sec": 3}}}
            path = self.write(data)
            with McpProcess("serve", "--stdio", "--config", path, env=self.env) as server:
                server.initialize()
                self.assertEqual(text_of(server.call("web__echo", {"message": "via mcp-studio config"})),
                                 "via mcp-studio config\n")
            with McpProcess("serve", "--stdio", "--config", path, env=dict(self.env, MCPS_TEST_TOKEN="wrong")) as server:
                server.initialize()
                self.assertNotIn("web__echo", [t["name"] for t in server.request("tools/list")["result"]["tools"]])


                def last_error():
                    return server.call("mcpstudio__servers_list", {})["structuredContent"]["servers"][0]["lastError"]
                self.assertTrue(wait_until(last_error, WAIT), server.context())  # refused: it never started

    def test_older_shapes_read(self):
        # In-process: mcp-studio's earlier shapes: namespaces as a list of {"id", "serverIds"},
        # defaultNamespaceId, permissions with namespaceId/serverId, autostart, and OAuth keys
        # (read into the server's sign-in settings, snake_case too).
        import mcpstudio
        data = self.config()
        data["namespaces"] = [{"id": "work", "name": "Work", "serverIds": ["files", "notes"]},
                              {"id": "home", "name": "Home", "serverIds": ["notes"], "denyByDefault": True}]
        del data["defaultNamespace"]
        data["defaultNamespaceId"] = "home"
        data["toolPermissions"] = [{"namespaceId": "home", "serverId": "notes", "toolName": "echo", "enabled": True}]
        data["servers"]["notes"]["autostart"] = True
        data["servers"]["remote"]["oauth"] = {"client_id": "abc"}
        loader = mcpstudio.ConfigLoader(self.write(data), environ=self.env)
        plan = mcpstudio.read_upstreams(loader, loader.read(), None)
        specs = {spec.key: spec for spec in plan.specs}
        self.assertEqual(sorted(plan.namespaces), ["home", "work"])
        self.assertEqual(plan.namespaces["work"]["servers"], ["files", "notes"])
        self.assertEqual((plan.default, plan.default_key), ("home", "defaultNamespaceId"))
        self.assertIsNone(plan.denial("home", specs["notes"], "echo"))
        self.assertIn("denies the tools of server `notes`", plan.denial("home", specs["notes"], "sleep"))
        self.assertIsNone(plan.denial("work", specs["notes"], "sleep"))
        self.assertIn("deniedTools", plan.denial(None, specs["files"], "crash"))
        self.assertTrue(specs["notes"].eager)
        self.assertEqual(specs["remote"].oauth, {"clientId": "abc"})

    def test_mistakes_are_named(self):
        # A misspelled key, an unset bearer variable, headers on a stdio server, a permission for an
        # unknown namespace or server, and a non-boolean serverDefaults each name the place.
        cases = []
        data = self.config()
        data["servers"]["files"]["enabeld"] = True
        cases.append((data, "servers.files.enabeld: unknown key (did you mean `enabled`?)"))
        data = self.config()
        data["servers"]["remote"]["bearer_token_env_var"] = "MCPS_TEST_UNSET_VAR"
        data["servers"]["remote"]["enabled"] = True
        cases.append((data, "bearer_token_env_var: the variable MCPS_TEST_UNSET_VAR is not set"))
        data = self.config()
        data["servers"]["notes"]["http_headers"] = {"X-A": "b"}
        cases.append((data, "servers.notes.http_headers: only a server with a `url` sends HTTP headers"))
        data = self.config()
        data["toolPermissions"].append({"namespace": "wrok", "server": "files", "toolName": "x", "enabled": True})
        cases.append((data, "toolPermissions[2].namespace: no namespace \"wrok\" is configured"))
        data = self.config()
        data["toolPermissions"].append({"namespace": "work", "server": "filez", "toolName": "x", "enabled": True})
        cases.append((data, 'toolPermissions[2].server: no server "filez" is configured (did you mean "files"?)'))
        data = self.config()
        data["namespaces"]["work"]["serverDefaults"]["notes"] = "deny"
        cases.append((data, "namespaces.work.serverDefaults.notes: expected true"))
        data = self.config()
        data["namespaces"][""] = {"servers": ["files"]}
        cases.append((data, 'namespaces: a namespace needs a name, not "" (e.g. "work")'))
        for data, expected in cases:
            proc = subprocess.run(SERVER + ["serve", "--stdio", "--config", self.write(data), "--namespace", "work"],
                                  capture_output=True, text=True, timeout=WAIT, env=self.env,
                                  stdin=subprocess.DEVNULL)
            self.assertIn(expected, proc.stderr)


class SeedRulesTests(ScratchDir):
    """The seed documents' own examples and rules, and one naming rule across modes (issue 13)."""

    def run_cli(self, *args, env=None):
        return subprocess.run(SERVER + list(args), capture_output=True, text=True, timeout=WAIT,
                              stdin=subprocess.DEVNULL, env=env)

    def check_tool(self, name, command):
        """`check --config` of a config holding one tool with this command."""
        path = os.path.join(self.dir, name + ".json")
        with open(path, "w") as f:
            json.dump({"tools": [{"name": "t", "command": command}]}, f)
        return self.run_cli("check", "--config", path)

    def test_empty_or_blank_command_refused(self):
        # `mcpstudio ""` and `mcpstudio "   "` fail at startup (exit 2) saying why, as does a config tool
        # whose command is blank; none serves a tool.
        for words in ([""], ["   "], ["", "{x}"]):
            proc = self.run_cli(*words)
            self.assertEqual(proc.returncode, 2, words)
            self.assertIn("the command is empty or blank", proc.stderr)
            self.assertEqual(proc.stdout, "")
        proc = self.check_tool("blank", "   ")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("tools[0].command: bad template: the command template has no command", proc.stderr)

    def test_nested_fields_are_an_error(self):
        # `{a{b}}` is refused (seed 000: nested templates are not supported), in template mode and in a
        # config's command, naming the field; JSON around a field and an escaped brace stay fine.
        import mcpstudio
        for words in (["echo", "{a{b}}"], ["echo", "--x={name{inner}}"], ["echo", "{{a{b}}}"]):
            with self.assertRaises(mcpstudio.TemplateError) as caught:
                mcpstudio.Template(words)
            self.assertIn("stands inside another field", str(caught.exception))
        self.assertEqual(list(mcpstudio.Template(["echo", '{"k":{v}}']).fields), ["v"])
        self.assertEqual(list(mcpstudio.Template(["echo", "\\{a{b}}"]).fields), ["b"])
        proc = self.run_cli("echo", "{a{b}}")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("`{b}` stands inside another field (`{a{b}}`)", proc.stderr)
        proc = self.check_tool("nested", "echo {a{b}}")
        self.assertEqual(proc.returncode, 1)
        self.assertIn("tools[0].command: bad template: `{b}` stands inside another field", proc.stderr)

    def test_dash_names_in_braces_are_literal(self):
        # `{-r}` is not a field (a name starts with a letter or _), so it stays literal text, like `{ }`;
        # `[-r]` is the boolean flag.
        with McpProcess("echo", "{-r}", "[-r]") as server:
            server.initialize()
            tool = server.request("tools/list")["result"]["tools"][0]
            self.assertEqual(list(tool["inputSchema"]["properties"]), ["r"])
            self.assertEqual(tool["inputSchema"]["properties"]["r"]["type"], "boolean")
            self.assertEqual(text_of(server.call("echo", {"r": True})), "{-r} -r\n")

    def test_log_level(self):
        # --log-level debug|info|warn|error (seed 004) is accepted: debug adds debug lines, warn and
        # error keep info lines off stderr; anything else is a usage error.
        fake = self.script("fake_mcp.py", FAKE_SERVER, executable=False)
        path = os.path.join(self.dir, "agg.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {"a": {"command": PY, "args": [fake, "--name", "a"]}}}, f)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        messages = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
                    {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "a__echo",
                                                                                 "arguments": {"text": "x"}}}]
        seen = {}
        for level in ("debug", "info", "warn", "error"):
            with McpProcess("serve", "--stdio", "--config", path, "--log-level", level, env=env) as server:
                for message in messages:
                    server.send(message)
                self.assertEqual(text_of(server.wait_response(2)["result"]), "a: x")  # the upstream may start slowly
                self.assertEqual(server.close(), 0)
                seen[level] = "".join(server.stderr)
        self.assertIn("debug:", seen["debug"])
        self.assertIn("namespace (all)", seen["info"])
        self.assertNotIn("debug:", seen["info"])
        for level in ("warn", "error"):
            self.assertNotIn("namespace (all)", seen[level])
        proc = self.run_cli("--log-level", "loud", "echo", "x")
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--log-level loud: use debug, info, warn or error", proc.stderr)

    def test_default_descriptions_for_booleans_and_arrays(self):
        # A boolean or array field without `# description` still tells the model what it does.
        with McpProcess("ls", "[-l]", "[--all # show hidden files]", "--ignore={skip...}", "[paths...]") as server:
            server.initialize()
            props = server.request("tools/list")["result"]["tools"][0]["inputSchema"]["properties"]
            self.assertEqual(props["l"]["description"], "true adds `-l` to the command; false leaves it out.")
            self.assertEqual(props["all"]["description"], "show hidden files")
            self.assertEqual(props["paths"]["description"], "A list of values; each becomes one argument of the command.")
            self.assertEqual(props["skip"]["description"],
                             "A list of values, joined with commas where the template puts it.")

    def test_one_naming_rule(self):
        # Template mode keeps a command's dashes as script mode and the aggregator do (`say-hi`, not
        # `say_hi`); a call still spelled the old way (`say_hi`) reaches the tool.
        say = self.script("say-hi", "#!/bin/sh\necho \"hi $1\"\n")
        with McpProcess(say, "{name}") as server:
            server.initialize()
            self.assertEqual([t["name"] for t in server.request("tools/list")["result"]["tools"]], ["say-hi"])
            self.assertEqual(text_of(server.call("say-hi", {"name": "Ada"})), "hi Ada\n")
            self.assertEqual(text_of(server.call("say_hi", {"name": "Bo"})), "hi Bo\n")
            self.assertEqual(server.request("tools/call", {"name": "say_ho", "arguments": {}})["error"]["code"], -32602)


class ExampleTests(unittest.TestCase):
    """The client configs in examples/ are real: every entry serves the tool it names."""

    def entries(self):
        """(file, key, mcpstudio argv) for every mcpstudio server in examples/."""
        import shlex
        folder = os.path.join(HERE, "examples")
        found = []
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            servers = {}
            if name.endswith(".json"):
                with open(path) as f:
                    data = json.load(f)
                servers = data.get("mcpServers") or data.get("servers") or {}
            elif name.endswith(".toml") and sys.version_info >= (3, 11):
                import tomllib
                with open(path, "rb") as f:
                    servers = tomllib.load(f).get("mcp_servers", {})
            elif name.endswith(".sh"):
                with open(path) as f:
                    for line in f:
                        if line.startswith("claude mcp add "):
                            words = shlex.split(line)
                            end = words.index("--")
                            env = dict(w.split("=", 1) for w in words[words.index("--env") + 1:end])
                            servers[words[3]] = {"command": words[end + 1], "args": words[end + 2:], "env": env}
            for key, entry in servers.items():
                # Every entry starts the module from cached bytecode: python3 -m mcpstudio, its folder on PYTHONPATH.
                self.assertEqual(entry["args"][:2], ["-m", "mcpstudio"], (name, key))
                where = entry["env"]["PYTHONPATH"].replace("${workspaceFolder}", HERE)
                self.assertEqual(where.replace("/path/to/mcpstudio", HERE), HERE, (name, key))
                found.append((name, key, [a.replace("${workspaceFolder}", HERE).replace("/path/to/mcpstudio/", HERE + "/")
                                          for a in entry["args"][2:]]))
        return found

    def test_every_example_serves_its_tool(self):
        entries = self.entries()
        self.assertGreaterEqual(len(entries), 10)
        env = dict(os.environ, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="mcpstudio-cache-"))
        self.addCleanup(shutil.rmtree, env["XDG_CACHE_HOME"], True)
        for name, key, args in entries:
            with self.subTest(file=name, server=key):
                with McpProcess(*args, env=env) as server:
                    server.initialize()
                    tools = server.request("tools/list")["result"]["tools"]
                    names = [t["name"] for t in tools]
                    if "serve" in args or "--root-directory" in args:  # a config or script folder: many tools
                        self.assertGreaterEqual(len(names), 3, server.context())
                    else:
                        self.assertEqual(names, [key], server.context())
                    self.assertTrue(all(t["inputSchema"]["type"] == "object" for t in tools))

    def test_example_configs_pass_check(self):
        # Every config in examples/configs is valid and `check` shows its tools (skills.json: its skills).
        folder = os.path.join(HERE, "examples", "configs")
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
        self.assertGreaterEqual(len(names), 3)
        for name in names:
            with self.subTest(config=name):
                proc = subprocess.run(SERVER + ["check", "--config", os.path.join(folder, name)],
                                      capture_output=True, text=True, timeout=WAIT)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn("skills in " if name == "skills.json" else "tools:", proc.stdout)

    def test_pipe_example_runs(self):
        # The "shell": true example counts matches through a pipe, and a hostile pattern stays text.
        config = os.path.join(HERE, "examples", "configs", "pipes.json")
        with McpProcess("serve", "--config", config) as server:
            server.initialize()
            result = server.call("count_matches", {"pattern": "^import ", "file": MODULE})
            self.assertFalse(result["isError"], result)
            with open(MODULE) as f:
                expected = sum(1 for line in f if line.startswith("import "))
            self.assertEqual(int(text_of(result)), expected)
            result = server.call("count_matches", {"pattern": "$(touch /tmp/mcpstudio-pwned)", "file": MODULE})
            self.assertEqual(int(text_of(result).split()[0]), 0)
            self.assertFalse(os.path.exists("/tmp/mcpstudio-pwned"))
            # A pattern may start with '-' (it sits inside --regexp=...); so may a file after `--`,
            # where grep reads it as a file name (none such: nothing counted), never as an option.
            self.assertEqual(int(text_of(server.call("count_matches", {"pattern": "--q9-not-in-module", "file": MODULE}))), 0)
            result = text_of(server.call("count_matches", {"pattern": "x", "file": "--help"}))
            self.assertNotIn("starts with '-'", result)
            self.assertEqual(result.split()[0], "0")

    def test_readme_config_example(self):
        # The config shown in the README loads, and `check` accepts it.
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        block = readme.split("```jsonc\n", 1)[1].split("```", 1)[0]
        with tempfile.TemporaryDirectory() as folder:
            os.mkdir(os.path.join(folder, "scripts"))
            os.mkdir(os.path.join(folder, "notes"))  # the example's "within" folder
            path = os.path.join(folder, "tools.json")
            with open(path, "w") as f:
                f.write(block)
            proc = subprocess.run(SERVER + ["check", "--config", path], capture_output=True, text=True,
                                  timeout=WAIT, env=dict(os.environ, XDG_CACHE_HOME=folder))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for name in ("git_status", "git_log", "count", "jq", "git://branches/{repo}"):
            self.assertIn(name, proc.stdout)

    def test_git_and_grep_examples_run(self):
        # Two examples called for real on this repository's own files.
        entries = {(f, k): a for f, k, a in self.entries()}
        with McpProcess(*entries[("claude_desktop_config.json", "search")]) as server:
            server.initialize()
            result = server.call("search", {"pattern": "def main", "paths": [MODULE], "ignore_case": True})
            self.assertFalse(result["isError"], result)
            self.assertIn("def main(", text_of(result))
        if shutil.which("git") and os.path.isdir(os.path.join(HERE, ".git")):
            with McpProcess(*entries[("claude_desktop_config.json", "git_log")]) as server:
                server.initialize()
                result = server.call("git_log", {"repo": HERE, "limit": "1", "paths": ["mcpstudio.py"]})
                self.assertFalse(result["isError"], result)
                self.assertEqual(len(text_of(result).strip().splitlines()), 1)



# --------------------------------------------------------------------------
# Aggregator: upstream MCP servers behind one (mcpServers / servers configs)
# --------------------------------------------------------------------------

def fake_server(args):
    """A small MCP server over stdio for the aggregator tests; its behaviour comes from `args`.

    Run as `python3 fake_mcp.py ARGS`, a two-line file that imports this module (see FAKE_SERVER).
    """
    import json
    import os
    import subprocess
    import sys
    import threading
    import time

    def opt(name, default=None):
        return args[args.index(name) + 1] if name in args else default

    if opt("--launch-file"):  # when it was launched, before any --slow-start
        with open(opt("--launch-file"), "a") as f:
            f.write("%f\n" % time.time())
    if "--crash-at-start" in args or os.environ.get("FAKE_CRASH_AT_START"):
        sys.stderr.write("fake: cannot start: missing API key\n")
        sys.exit(3)
    if opt("--slow-start") and not os.environ.get("FAKE_QUICK_START"):  # (set by cache_tools)
        time.sleep(float(opt("--slow-start")))
    if opt("--pidfile"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        with open(opt("--pidfile"), "a") as f:
            f.write("%d %d %s\n" % (os.getpid(), child.pid, opt("--name", "fake")))
    if "--garbage" in args:
        sys.stdout.write("Welcome to fake server v1 (this line is not JSON-RPC)\n")
        sys.stdout.flush()

    NAME = opt("--name", "fake")
    COUNT = int(opt("--tools", "0"))
    lock = threading.Lock()
    TOOLS = [
        {"name": "echo", "description": "Echo text back", "title": "Echo",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
         "outputSchema": {"type": "object", "properties": {"echoed": {"type": "string"}}},
         "annotations": {"readOnlyHint": True}, "_meta": {"x-fake": 1}},
        {"name": "sleep", "description": "Sleep, reporting progress",
         "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
        {"name": "crash", "description": "Exit in the middle of the call", "inputSchema": {"type": "object"}},
        {"name": "env", "description": "Read a variable",
         "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
        {"name": "dotted.name/x", "description": "A name clients reject", "inputSchema": {"type": "object"}},
    ] + [{"name": "t%04d" % i, "description": "tool %d" % i, "inputSchema": {"type": "object"}} for i in range(COUNT)]
    if "--task-support" in args:  # tools of the tasks era say how they run as a task
        TOOLS[0] = dict(TOOLS[0], execution={"taskSupport": "optional"})
    if "--ask" in args:
        TOOLS.append({"name": "ask", "description": "Ask the client (roots/list by default)", "inputSchema": {"type": "object"}})
        TOOLS.append({"name": "mrtr", "description": "Ask two rounds of questions (SEP-2322)", "inputSchema": {"type": "object"}})
    if opt("--extra-tool"):  # a tool listed without an inputSchema, under the given name
        TOOLS.append({"name": opt("--extra-tool"), "description": "No schema"})
    if "--huge-description" in args:
        TOOLS.append({"name": "huge", "description": "x" * 100000, "inputSchema": {"type": "object"}})
    for extra in (opt("--more-tools") or "").split(","):  # more tools, answering "NAME called"
        if extra:
            TOOLS.append({"name": extra, "description": "extra", "inputSchema": {"type": "object"}})
    ONLY = opt("--only") or os.environ.get("FAKE_ONLY")
    if ONLY:
        TOOLS = [t for t in TOOLS if t["name"] in ONLY.split(",")]
    stalled = []
    cancelled = set()
    listening = []  # 2026-07-28: (id, notifications) of each subscriptions/listen, in order
    answers = {}  # id of a request this server sent its client -> the answer

    def send(message):
        with lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    def call(request_id, params):
        name, arguments = params["name"], params.get("arguments") or {}
        token = (params.get("_meta") or {}).get("progressToken")
        if name == "echo":
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "logger": "echo", "data": "echoing %s" % arguments.get("text")}})
            return {"content": [{"type": "text", "text": "%s: %s" % (NAME, arguments.get("text"))}],
                    "structuredContent": {"echoed": arguments.get("text")}}
        if name == "sleep":
            seconds = float(arguments.get("seconds", 1))
            started = time.time()
            step = 0
            while time.time() - started < seconds:
                if request_id in cancelled:
                    with open(opt("--cancel-file", os.devnull), "a") as f:
                        f.write("cancelled %s\n" % request_id)
                    return None
                step += 1
                if token is not None:
                    send({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": token, "progress": step, "total": 1000, "message": "step %d" % step}})
                time.sleep(0.05)
            return {"content": [{"type": "text", "text": "slept"}]}
        if name == "ask":  # a request to the client (roots/list by default); unanswered by `cancel_after`: cancelled
            ask_id = "ask-%s" % request_id
            send({"jsonrpc": "2.0", "id": ask_id, "method": arguments.get("method", "roots/list"),
                  "params": arguments.get("params", {})})
            started = time.time()
            while ask_id not in answers and time.time() - started < float(arguments.get("cancel_after", 10)):
                time.sleep(0.02)
            if ask_id not in answers:
                send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": ask_id}})
                return {"content": [{"type": "text", "text": "gave up"}]}
            return {"content": [{"type": "text", "text": json.dumps(answers[ask_id])}]}
        if name == "mrtr":  # SEP-2322, as a 2026-07-28 server does it: two rounds of questions, then the answer
            responses, state = params.get("inputResponses") or {}, params.get("requestState")
            capabilities = sorted((params.get("_meta") or {}).get("io.modelcontextprotocol/clientCapabilities") or {})
            if state is None:
                return {"resultType": "input_required", "requestState": "round-2", "inputRequests": {"who": {
                    "method": "elicitation/create", "params": {"message": "Your name?", "requestedSchema": {
                        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}}}
            if state == "round-2" and "who" in responses:
                who = responses["who"]["content"]["name"]
                return {"resultType": "input_required", "requestState": "round-3:" + who, "inputRequests": {
                    "where": {"method": "roots/list", "params": {}},
                    "think": {"method": "sampling/createMessage", "params": {"maxTokens": 5, "messages": [
                        {"role": "user", "content": {"type": "text", "text": "Say something"}}]}}}}
            if state.startswith("round-3:") and "where" in responses and "think" in responses:
                roots = [r["uri"] for r in responses["where"]["roots"]]
                return {"content": [{"type": "text", "text": "hello %s at %s, who says %s (client: %s)" % (
                    state[len("round-3:"):], ",".join(roots), responses["think"]["content"]["text"],
                    ",".join(capabilities))}]}
            return {"content": [{"type": "text", "text": "bad retry: %s" % json.dumps(params)}], "isError": True}
        if name == "crash":
            sys.stderr.write("fake: crashing on purpose\n")
            sys.stderr.flush()
            os._exit(7)
        if name == "env":
            return {"content": [{"type": "text", "text": os.environ.get(arguments.get("name", ""), "<unset>")}]}
        if name == "burst":  # list_changed this many times at once (in 2026-07-28, on the listen stream only)
            for _ in range(int(arguments.get("count", 1))):
                if MODERN and listening:
                    send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {
                        "_meta": {"io.modelcontextprotocol/subscriptionId": listening[-1][0]}}})
                elif not MODERN:
                    send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        if name == "flood":  # this many 1 KB log lines, as fast as they go; then `done` in --flood-file
            def flood():
                for i in range(int(arguments.get("lines", 1))):
                    send({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "info", "logger": "flood", "data": "%08d " % i + "y" * 1015}})
                with open(opt("--flood-file"), "a") as f:
                    f.write("done\n")
            threading.Thread(target=flood, daemon=True).start()
        return {"content": [{"type": "text", "text": "%s called" % name}]}

    MODERN = "--modern-only" in args  # a server of the 2026-07-28 era: no initialize, _meta on every request
    DUAL = "--dual" in args  # both eras: initialize, and any request with the 2026-07-28 _meta; `mrtr` only there

    def handle(message):
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        modern_message = "io.modelcontextprotocol/protocolVersion" in (params.get("_meta") or {})
        if opt("--era-file") and method in ("tools/call", "tools/list"):  # which era each request came in
            with open(opt("--era-file"), "a") as f:
                f.write("%s %s %s\n" % (method, params.get("name", "-"), "2026" if modern_message else "handshake"))
        if opt("--inputs-file") and method == "tools/call":  # the inputResponses keys each call came with
            with open(opt("--inputs-file"), "a") as f:
                f.write(json.dumps(sorted(params.get("inputResponses") or {})) + "\n")
        if DUAL and modern_message and method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS + [
                {"name": "mrtr", "description": "Ask two rounds of questions (SEP-2322)", "inputSchema": {"type": "object"}}]}})
            return
        if (MODERN or (DUAL and modern_message)) and request_id is not None:
            meta = params.get("_meta") or {}
            if "io.modelcontextprotocol/logLevel" in meta:  # 2026-07-28: the log level comes with each request
                with open(opt("--level-file", os.devnull), "a") as f:
                    f.write(meta["io.modelcontextprotocol/logLevel"] + "\n")
            if method == "initialize":
                send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no initialize here"}})
                return
            if meta.get("io.modelcontextprotocol/protocolVersion") != "2026-07-28":
                send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": "_meta missing"}})
                return
            if method == "subscriptions/listen":  # acknowledged, then open until cancelled; updates at once
                wanted = params.get("notifications") or {}
                listening.append((request_id, wanted))
                with open(opt("--listen-file", os.devnull), "a") as f:
                    f.write(json.dumps(wanted, sort_keys=True) + "\n")
                send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
                    "_meta": {"io.modelcontextprotocol/subscriptionId": request_id}, "notifications": wanted}})
                for uri in wanted.get("resourceSubscriptions") or ():
                    send({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {
                        "uri": uri, "_meta": {"io.modelcontextprotocol/subscriptionId": request_id}}})
                return
            if method == "server/discover":
                send({"jsonrpc": "2.0", "id": request_id, "result": {
                    "resultType": "complete", "supportedVersions": ["2026-07-28"] + (["2025-11-25"] if DUAL else []),
                    "ttlMs": 0, "cacheScope": "public",
                    "capabilities": {"tools": {"listChanged": True}, "prompts": {}, "completions": {},
                                     "resources": {"subscribe": True, "listChanged": True}},
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": NAME, "version": "2"}}}})
                return
        if method == "notifications/cancelled":
            cancelled.add(params.get("requestId"))
            return
        if request_id is None:
            return
        if ("--hang" in args and method != "initialize") or stalled:
            return
        if method == "prompts/list" and "--stall-after-list" in args:  # the last listing mcpstudio asks for
            stalled.append(True)
        if method == "initialize":
            result = {"protocolVersion": params.get("protocolVersion"), "serverInfo": {"name": NAME, "version": "1.0"},
                      "capabilities": {"tools": {"listChanged": True}, "resources": {}, "prompts": {}, "logging": {},
                                       "completions": {}}}
            if "--no-tools" in args:
                del result["capabilities"]["tools"]
            if "--endless-task" in args:  # a call made a task runs for ever, polled as often as it can be
                result["capabilities"]["tasks"] = {"requests": {"tools": {"call": {}}}}
        elif method in ("tools/call", "tasks/get", "tasks/cancel") and "--endless-task" in args and (
                "task" in params or method != "tools/call"):
            with open(opt("--poll-file", os.devnull), "a") as f:
                f.write("%s %f\n" % (method, time.time()))
            task = {"taskId": "endless", "status": "cancelled" if method == "tasks/cancel" else "working",
                    "pollInterval": 0, "ttl": 600000, "createdAt": "2026-01-01T00:00:00Z",
                    "lastUpdatedAt": "2026-01-01T00:00:00Z"}
            result = {"task": task} if method == "tools/call" else task
        elif method == "ping":
            result = {}
        elif method in ("resources/subscribe", "resources/unsubscribe"):  # updated at once, so the test sees it
            result = {}
            if method == "resources/subscribe":
                threading.Timer(0.1, send, ({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                             "params": {"uri": params.get("uri")}},)).start()
        elif method == "logging/setLevel":
            with open(opt("--level-file", os.devnull), "a") as f:
                f.write(params.get("level", "?") + "\n")
            result = {}
        elif method == "tools/list" and "--no-tools" in args:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no tools here"}})
            return
        elif method == "tools/list":
            if opt("--list-file"):  # one line per tools/list request
                with open(opt("--list-file"), "a") as f:
                    f.write("list\n")
            start = int(params.get("cursor") or 0)
            result = {"tools": TOOLS[start:start + 50]}
            if start + 50 < len(TOOLS):
                result["nextCursor"] = str(start + 50)
        elif method == "tools/call":
            result = call(request_id, params)
            if result is None:
                return
            if opt("--reply-mb"):  # one answer line of this many MB
                result = {"content": [{"type": "text", "text": "x" * int(float(opt("--reply-mb")) * 1000000)}]}
            if "--deep-before-reply" in args:  # a line nested 200,000 deep, then the reply, in one write
                with lock:
                    sys.stdout.write("[" * 200000 + "]" * 200000 + "\n" + json.dumps(
                        {"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
                    sys.stdout.flush()
                return
        elif method == "resources/list":
            result = {"resources": [{"uri": "fake://%s/info" % NAME, "name": "info", "mimeType": "text/plain"}]}
        elif method == "resources/templates/list":
            result = {"resourceTemplates": [{"uriTemplate": "fake://%s/items/{id}" % NAME, "name": "item"}]}
        elif method == "resources/read":
            uri = params["uri"]
            time.sleep(float(opt("--slow-read", "0")))
            if not uri.startswith("fake://%s/" % NAME):
                send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32002, "message": "no such resource"}})
                return
            result = {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "%s read %s" % (NAME, uri)}]}
        elif method == "prompts/list":
            result = {"prompts": [{"name": "greet", "description": "Say hello",
                                   "arguments": [{"name": "who", "required": True}]}]}
        elif method == "completion/complete":  # the argument's value, completed, and the era it was asked in
            era = "2026" if "io.modelcontextprotocol/protocolVersion" in (params.get("_meta") or {}) else "handshake"
            result = {"completion": {"values": ["%s-%s-%s" % ((params.get("argument") or {}).get("value"), NAME, era)],
                                     "hasMore": False}}
        elif method == "prompts/get":
            who = (params.get("arguments") or {}).get("who", "?")
            result = {"messages": [{"role": "user", "content": {"type": "text", "text": "Hello %s from %s" % (who, NAME)}}]}
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no %s" % method}})
            return
        send({"jsonrpc": "2.0", "id": request_id, "result": result})

    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "method" not in message:  # an answer to a request of ours
            answers[message.get("id")] = message
            continue
        if message["method"] == "notifications/initialized":  # requests no call caused
            for method in filter(None, (opt("--ask-unprompted") or "").split(",")):
                send({"jsonrpc": "2.0", "id": "unprompted-" + method, "method": method, "params": {
                    "message": "Your password?", "requestedSchema": {"type": "object", "properties": {}},
                    "messages": [], "maxTokens": 5}})
        if message.get("method") == "tools/call" and message["params"]["name"] in ("sleep", "ask"):
            threading.Thread(target=handle, args=(message,), daemon=True).start()
        else:
            handle(message)
    if "--ignore-eof" in args:  # a server that does not exit when its stdin closes
        time.sleep(60)


# The fake server's file: it runs `fake_server` from this module, so the server is real code.
FAKE_SERVER = ("import sys; sys.path.insert(0, %r); sys.mcpstudio_test_child = True; "
               "import test_mcpstudio; test_mcpstudio.fake_server(sys.argv[1:])\n" % HERE)
NAME_OK = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class SelectNamespaceTests(unittest.TestCase):
    def test_table(self):
        two = {"work": {}, "home": {}}
        cases = [  # (namespaces, --namespace, default) -> (chosen, fragment of how or of the error)
            (two, "work", None, "work", "--namespace work"),
            (two, "play", None, None, "unknown namespace \"play\" given by --namespace"),
            (two, None, "home", "home", "defaultNamespace in the config"),
            (two, None, "gone", None, "unknown namespace \"gone\" in defaultNamespace"),
            (two, "work", "home", "work", "--namespace"),
            ({"only": {}}, None, None, "only", "the only namespace"),
            ({}, None, None, None, "every server"),
            ({}, "default", None, None, "configured namespaces: none"),
            (two, None, None, None, "several (home, work); choose one with --namespace NAME"),
        ]
        for namespaces, requested, default, chosen, fragment in cases:
            with self.subTest(requested=requested, default=default, namespaces=sorted(namespaces)):
                name, how, error = mcpstudio.select_namespace(namespaces, requested, default)
                self.assertEqual(name, chosen)
                self.assertIn(fragment, error if error else how)
                self.assertTrue((error is None) != (how is None))


class AggregatorCase(ScratchDir):
    """A scratch folder with the fake upstream server, its pid file and a private tools cache."""

    def setUp(self):
        super().setUp()
        self.fake = self.script("fake_mcp.py", FAKE_SERVER, executable=False)
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        self.env.pop("FAKE_ONLY", None)
        self.pids = os.path.join(self.dir, "pids")


class AggregatorTests(AggregatorCase):
    def upstream(self, name, *args, **keys):
        return dict({"command": PY, "args": [self.fake, "--name", name, "--pidfile", self.pids] + list(args)}, **keys)

    def write(self, data, name="agg.json") -> str:
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(data, f)
        return path

    def serve(self, data, *args, env=None):
        return McpProcess("serve", "--config", self.write(data), *args, env=env or self.env)

    def started(self):
        """[(server pid, grandchild pid)] of every fake server started so far."""
        if not os.path.exists(self.pids):
            return []
        with open(self.pids) as f:
            return [tuple(int(p) for p in line.split()[:2]) for line in f if line.strip()]

    def pid_of(self, name):
        """The pid of the last fake server started under `name`."""
        with open(self.pids) as f:
            return [int(line.split()[0]) for line in f if line.split()[2:] == [name]][-1]

    def tool_names(self, server):
        names, cursor = [], None
        while True:
            result = server.request("tools/list", {"cursor": cursor} if cursor else {})["result"]
            names += [t["name"] for t in result["tools"]]
            cursor = result.get("nextCursor")
            if not cursor:
                return names

    def cache_tools(self, data, expected):
        """Run once so the tools are cached; then forget which servers started. A --slow-start
        server starts at once here (FAKE_QUICK_START reaches it through mcpstudio's environment,
        which the cache's key leaves out): the test waits on its slow start once, not twice."""
        with self.serve(data, env=dict(self.env, FAKE_QUICK_START="1")) as server:
            server.initialize()  # a slow server's tools arrive after the first listing: list until they do
            self.assertTrue(wait_until(lambda: expected in self.tool_names(server), interval=0.3))
        self.assert_all_gone()
        os.remove(self.pids)

    def assert_all_gone(self, timeout=WAIT):
        pids = [pid for pair in self.started() for pid in pair]
        self.assertTrue(pids)
        self.assertTrue(wait_until(lambda: not any(alive(p) for p in pids), timeout),
                        "left running: %s" % [p for p in pids if alive(p)])

    def test_names_routing_and_pass_through(self):
        data = {"mcpServers": {"alpha": self.upstream("alpha"),
                               "io.github.x/beta": self.upstream("beta", "--garbage", autoApprove=[], timeout=60)},
                "servers": {"gamma": dict(self.upstream("gamma"), type="stdio")},
                "tools": [{"name": "hello", "command": "echo hello {who}"}]}
        with self.serve(data) as server:
            init = server.initialize()["result"]
            self.assertEqual(set(init["capabilities"]), {"tools", "resources", "prompts", "logging", "completions", "tasks"})
            result = server.request("tools/list")["result"]
            tools = {t["name"]: t for t in result["tools"]}
            names = [t["name"] for t in result["tools"]]
            self.assertEqual(names[:6], ["hello", "alpha__echo", "alpha__sleep", "alpha__crash", "alpha__env",
                                         "alpha__dotted_name_x"])  # the file's tools, then servers in file order
            self.assertIn("io_github_x_beta__echo", tools)
            self.assertIn("gamma__echo", tools)
            self.assertEqual(names[-7:], ["mcpstudio__" + t for t in (
                "servers_list", "servers_start", "servers_stop", "servers_restart", "server_logs",
                "config_reload", "namespaces_list")])
            for name in names:
                self.assertRegex(name, NAME_OK)
            echo = tools["alpha__echo"]
            self.assertEqual(echo["description"], "[alpha] Echo text back")
            self.assertEqual(echo["title"], "Echo")
            self.assertEqual(echo["annotations"], {"readOnlyHint": True})
            self.assertEqual(echo["_meta"], {"x-fake": 1})
            self.assertEqual(echo["outputSchema"]["properties"]["echoed"], {"type": "string"})
            self.assertEqual(echo["inputSchema"]["required"], ["text"])
            self.assertEqual(tools["io_github_x_beta__echo"]["description"], "[io.github.x/beta] Echo text back")
            again = [t["name"] for t in server.request("tools/list")["result"]["tools"]]
            self.assertEqual(again, names)  # deterministic order
            result = server.call("io_github_x_beta__echo", {"text": "hi"})
            self.assertEqual(text_of(result), "beta: hi")
            self.assertEqual(result["structuredContent"], {"echoed": "hi"})
            self.assertEqual(text_of(server.call("alpha__dotted_name_x", {})), "dotted.name/x called")
            self.assertEqual(text_of(server.call("hello", {"who": "you"})), "hello you\n")
            logs = [n["params"] for n in server.notifications_of("notifications/message")]
            self.assertIn({"level": "info", "logger": "io_github_x_beta", "data": "echoing hi"}, logs)
            unknown = server.request("tools/call", {"name": "alpha__nope", "arguments": {}})
            self.assertEqual(unknown["error"]["code"], -32602)
            # Resources keep their URIs and are routed by table; templates reach their server; prompts are prefixed.
            uris = [r["uri"] for r in server.request("resources/list")["result"]["resources"]]
            self.assertEqual(uris, ["fake://alpha/info", "fake://beta/info", "fake://gamma/info"])
            read = server.request("resources/read", {"uri": "fake://gamma/info"})["result"]
            self.assertEqual(read["contents"][0]["text"], "gamma read fake://gamma/info")
            read = server.request("resources/read", {"uri": "fake://beta/items/7"})["result"]
            self.assertEqual(read["contents"][0]["text"], "beta read fake://beta/items/7")
            missing = server.request("resources/read", {"uri": "fake://nobody/x"})
            self.assertEqual(missing["error"]["code"], -32002)
            prompts = [p["name"] for p in server.request("prompts/list")["result"]["prompts"]]
            self.assertEqual(prompts, ["alpha__greet", "io_github_x_beta__greet", "gamma__greet"])
            got = server.request("prompts/get", {"name": "gamma__greet", "arguments": {"who": "Ann"}})["result"]
            self.assertEqual(got["messages"][0]["content"]["text"], "Hello Ann from gamma")
            logs = json.loads(text_of(server.call("mcpstudio__server_logs", {"server_id": "io.github.x/beta"})))
            self.assertTrue(any("not JSON-RPC: Welcome to fake server" in line for line in logs["lines"]), logs)
            self.assertEqual(server.close(), 0)
        self.assert_all_gone()

    def test_long_names_are_shortened_deterministically(self):
        key = "io.github.some-organisation/a-rather-long-server-name-for-testing"
        data = {"mcpServers": {key: self.upstream("long", "--only", "echo,sleep")}}
        seen = []
        for _ in range(2):
            with self.serve(data, "--max-name-length", "64", "--no-manager-tools") as server:
                server.initialize()
                names = self.tool_names(server)
                seen.append(names)
                self.assertEqual(len(names), 2)
                for name in names:
                    self.assertRegex(name, NAME_OK)
                    self.assertLessEqual(len(name), 64)
                self.assertEqual(len(set(names)), 2)
                self.assertEqual(text_of(server.call(names[0], {"text": "x"})), "long: x")
        self.assertEqual(seen[0], seen[1])

    def test_lazy_start_cache_and_list_changed(self):
        data = {"mcpServers": {"a": self.upstream("a"), "b": self.upstream("b")}}
        with self.serve(data) as server:
            server.initialize()  # no cache yet: initialize starts both (the listing comes next)
            self.assertTrue(wait_until(lambda: len(self.started()) == 2))
            names = self.tool_names(server)
            self.assertIn("a__echo", names)
            self.assertIn("b__echo", names)
            self.assertEqual(len(self.started()), 2)
        cached = os.listdir(os.path.join(self.dir, "cache", "mcpstudio"))
        self.assertEqual(len([n for n in cached if n.startswith("server-")]), 2, cached)
        self.assert_all_gone()
        os.remove(self.pids)
        with self.serve(data) as server:
            server.initialize()
            self.assertEqual(self.tool_names(server), names)  # from the cache
            self.assertEqual(self.started(), [])  # ... without starting any server
            self.assertEqual(text_of(server.call("b__echo", {"text": "lazy"})), "b: lazy")
            self.assertEqual(len(self.started()), 1)  # only b
            self.assertEqual(server.notifications_of("notifications/tools/list_changed"), [])  # same tools
        # The server now offers fewer tools than the cache says: starting it refreshes the list.
        env = dict(self.env, FAKE_ONLY="echo")
        with self.serve(data, env=env) as server:
            server.initialize()
            self.assertIn("a__sleep", self.tool_names(server))
            server.call("a__echo", {"text": "x"})
            self.assertTrue(wait_until(lambda: server.notifications_of("notifications/tools/list_changed")))
            names = self.tool_names(server)
            self.assertIn("a__echo", names)
            self.assertNotIn("a__sleep", names)

    def test_progress_cancellation_and_concurrency(self):
        cancels = os.path.join(self.dir, "cancels")
        data = {"mcpServers": {"a": self.upstream("a", "--cancel-file", cancels),
                               "one": self.upstream("one", maxConcurrency=1)}}
        with self.serve(data) as server:
            server.initialize()
            server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "a__sleep", "arguments": {"seconds": 30}, "_meta": {"progressToken": "tok-7"}}})
            self.assertTrue(wait_until(lambda: len([n for n in server.notifications_of("notifications/progress")
                                                    if n["params"]["message"].startswith("step")]) >= 3))
            progress = [n["params"] for n in server.notifications_of("notifications/progress")]
            self.assertTrue(all(p["progressToken"] == "tok-7" for p in progress))
            values = [p["progress"] for p in progress]
            self.assertEqual(values, sorted(set(values)))  # only ever increasing
            self.assertTrue(any(p.get("total") == 1000 for p in progress))
            server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})
            self.assertTrue(wait_until(lambda: os.path.exists(cancels)), "the upstream never saw the cancel")
            time.sleep(0.3)
            self.assertNotIn(7, server.responses)  # a cancelled request gets no response
            # maxConcurrency 1: two calls of 2 s run one after the other; without it, together (with room
            # for a loaded machine's slower start on either side: 1.9 s of room, where 1 s calls left 0.9 s and
            # a CI run with 12 suites on 2 cores took 1.96 s for two together).
            for name, least, most in (("one__sleep", 3.95, 16), ("a__sleep", 1.95, 3.85)):
                server.call(name, {"seconds": 0.01})  # started
                started = time.monotonic()
                for i in (1, 2):
                    server.send({"jsonrpc": "2.0", "id": "%s%d" % (name, i), "method": "tools/call",
                                 "params": {"name": name, "arguments": {"seconds": 2.0}}})
                for i in (1, 2):
                    server.wait_response("%s%d" % (name, i))
                elapsed = time.monotonic() - started
                self.assertTrue(least <= elapsed < most, "%s: %.2f s" % (name, elapsed))
            # Many concurrent calls: none lost, each answered with its own text.
            for i in range(50):
                server.send({"jsonrpc": "2.0", "id": "m%d" % i, "method": "tools/call",
                             "params": {"name": "a__echo", "arguments": {"text": str(i)}}})
            for i in range(50):
                self.assertEqual(text_of(server.wait_response("m%d" % i)["result"]), "a: %d" % i)

    def test_failures_are_reported_and_isolated(self):
        data = {"mcpServers": {
            "good": self.upstream("good"),
            "broken": self.upstream("broken", "--crash-at-start"),
            "hung": self.upstream("hung", "--hang", startupTimeout=1),
            "slow": self.upstream("slow", "--slow-start", "1.5", toolTimeout=0.5),
            "missing": {"command": os.path.join(self.dir, "no-such-program")},
            "unset": {"command": PY, "args": ["${MCPS_SURELY_UNSET_TOKEN}"]},
            "off": dict(self.upstream("off"), disabled=True)}}
        with self.serve(data) as server:
            server.initialize()
            self.assertIn("good__echo", self.tool_names(server))  # the healthy ones; a slow one may follow
            self.assertTrue(wait_until(lambda: "slow__echo" in self.tool_names(server), interval=0.3))
            names = self.tool_names(server)
            self.assertFalse([n for n in names if n.startswith(("broken", "hung", "missing", "unset", "off"))])
            statuses = {s["id"]: s for s in json.loads(text_of(server.call("mcpstudio__servers_list", {})))["servers"]}
            self.assertEqual(statuses["good"]["status"], "running")
            self.assertEqual(statuses["broken"]["status"], "failed")
            self.assertIn("exited with code 3", statuses["broken"]["lastError"])
            self.assertIn("missing API key", statuses["broken"]["lastError"])  # its stderr says why
            self.assertIn("within 1 s", statuses["hung"]["lastError"])
            self.assertIn("no-such-program", statuses["missing"]["lastError"])
            self.assertEqual(statuses["unset"]["status"], "misconfigured")
            self.assertIn("${MCPS_SURELY_UNSET_TOKEN} is not set", statuses["unset"]["lastError"])
            self.assertEqual(statuses["off"]["status"], "disabled")
            # A call that cannot be carried out is an isError result naming the server.
            result = server.call("slow__sleep", {"seconds": 5})
            self.assertTrue(result["isError"])
            self.assertIn("server `slow` did not answer tools/call within 0.5 s", text_of(result))
            self.assertEqual(text_of(server.call("good__echo", {"text": "still"})), "good: still")
            # Routed requests that are not tool calls get the seed's JSON-RPC codes.
            error = server.request("resources/read", {"uri": "fake://x/info"})["error"]
            self.assertEqual(error["code"], -32002)
            server.call("mcpstudio__servers_stop", {"server_id": "good"})
            error = server.request("resources/read", {"uri": "fake://good/items/1"})["error"]
            self.assertEqual(error["code"], -32003)
            self.assertIn("servers_stop", error["message"])
            result = server.call("mcpstudio__servers_start", {"server_id": "broken"})
            self.assertTrue(result["isError"])
            self.assertIn("server `broken` failed to start", text_of(result))
            result = server.call("mcpstudio__servers_start", {"server_id": "nobody"})
            self.assertTrue(result["isError"])
            self.assertIn("no server \"nobody\"", text_of(result))
            error = server.request("prompts/get", {"name": "nobody__greet"})["error"]
            self.assertEqual(error["code"], -32602)

    def test_crash_mid_call_restart_and_backoff(self):
        data = {"mcpServers": {"a": self.upstream("a")}}
        with self.serve(data) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("a__echo", {"text": "1"})), "a: 1")
            first = self.started()[0]
            started = time.monotonic()
            result = server.call("a__crash", {})
            self.assertLess(time.monotonic() - started, 3)  # failed at once, no hang
            self.assertTrue(result["isError"])
            self.assertIn("server `a` fake: crashing on purpose (it exited with code 7)", text_of(result))
            self.assertTrue(wait_until(lambda: not alive(first[1])), "the crashed server's child was left")
            self.assertEqual(text_of(server.call("a__echo", {"text": "2"})), "a: 2")  # restarted
            self.assertEqual(len(self.started()), 2)
            status = json.loads(text_of(server.call("mcpstudio__servers_list", {})))["servers"][0]
            self.assertEqual((status["status"], status["restarts"]), ("running", 1))
            self.assertIn("exited with code 7", "\n".join(json.loads(text_of(server.call(
                "mcpstudio__server_logs", {"server_id": "a", "lines": 100})))["lines"]))
            # Crashing again at once: the restart waits out a short backoff, then works.
            server.call("a__crash", {})
            started = time.monotonic()
            self.assertEqual(text_of(server.call("a__echo", {"text": "3"})), "a: 3")
            self.assertGreater(time.monotonic() - started, 0.8)

    def test_slow_start_sends_progress_and_health_checks_restart(self):
        data = {"mcpServers": {"slow": self.upstream("slow", "--slow-start", "2.5"),
                               "stalls": self.upstream("stalls", "--stall-after-list", healthCheckInterval=0.3)}}
        self.cache_tools(data, "slow__echo")
        with self.serve(data) as server:
            server.initialize()
            self.tool_names(server)
            self.assertEqual(self.started(), [])
            result = server.call("slow__echo", {"text": "up"}, meta={"progressToken": 5})
            self.assertEqual(text_of(result), "slow: up")
            booting = [n["params"] for n in server.notifications_of("notifications/progress")]
            self.assertGreaterEqual(len(booting), 2, booting)
            self.assertTrue(all(p["progressToken"] == 5 and "starting server slow" in p["message"] for p in booting))
            # A server that stops answering pings is restarted.
            server.call("mcpstudio__servers_start", {"server_id": "stalls"})
            self.assertTrue(wait_until(lambda: len(self.started()) >= 3, 10), self.started())  # slow, stalls twice
            logs = json.loads(text_of(server.call("mcpstudio__server_logs", {"server_id": "stalls"})))["lines"]
            self.assertTrue(any("no answer to ping" in line for line in logs), logs)

    def test_stopping_is_reliable(self):
        data = {"mcpServers": {"slow": self.upstream("slow", "--slow-start", "2"),
                               "stubborn": self.upstream("stubborn", "--ignore-eof")}}
        self.cache_tools(data, "slow__echo")
        with self.serve(data) as server:
            server.initialize()
            self.tool_names(server)
            # A call waiting for its server to start is answered when servers_stop ends the start.
            server.send({"jsonrpc": "2.0", "id": "waiting", "method": "tools/call",
                         "params": {"name": "slow__echo", "arguments": {"text": "x"}}})
            time.sleep(0.5)
            server.call("mcpstudio__servers_stop", {"server_id": "slow"})
            result = server.wait_response("waiting", timeout=5)["result"]
            self.assertTrue(result["isError"])
            self.assertIn("stopped with servers_stop", text_of(result))
            # A server that ignores stdin EOF: calls arriving while it stops are refused, not restarted.
            self.assertEqual(text_of(server.call("stubborn__echo", {"text": "1"})), "stubborn: 1")
            first = self.pid_of("stubborn")
            server.send({"jsonrpc": "2.0", "id": "stop", "method": "tools/call",
                         "params": {"name": "mcpstudio__servers_stop", "arguments": {"server_id": "stubborn"}}})
            time.sleep(0.2)
            refused = server.call("stubborn__echo", {"text": "2"})
            self.assertTrue(refused["isError"], refused)
            self.assertEqual(server.wait_response("stop")["result"]["structuredContent"]["status"], "stopped-by-user")
            self.assertFalse(alive(first))
            self.assertEqual(self.pid_of("stubborn"), first)  # nothing new started
            # Cancelling a stop half way still stops the whole group.
            server.call("mcpstudio__servers_start", {"server_id": "stubborn"})
            second = self.pid_of("stubborn")
            server.send({"jsonrpc": "2.0", "id": "stop2", "method": "tools/call",
                         "params": {"name": "mcpstudio__servers_stop", "arguments": {"server_id": "stubborn"}}})
            time.sleep(0.3)
            server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "stop2"}})
            self.assertTrue(wait_until(lambda: not alive(second), 8))
            status = lambda: server.call("mcpstudio__servers_list", {})["structuredContent"]["servers"][1]
            self.assertTrue(wait_until(lambda: (status()["status"], status()["pid"]) == ("stopped-by-user", None), 5),
                            status())

    def test_error_codes_of_routed_requests(self):
        data = {"mcpServers": {"a": self.upstream("a", "--slow-read", "2", toolTimeout=0.5),
                               "p": self.upstream("p", "--no-tools")}}
        with self.serve(data) as server:
            server.initialize()
            names = self.tool_names(server)
            self.assertIn("a__echo", names)
            self.assertFalse([n for n in names if n.startswith("p__")])
            prompts = [p["name"] for p in server.request("prompts/list")["result"]["prompts"]]
            self.assertIn("p__greet", prompts)  # p declares no tools, yet starts and serves its prompts
            error = server.request("resources/read", {"uri": "fake://a/info"})["error"]
            self.assertEqual(error["code"], -32004)
            self.assertIn("did not answer resources/read within 0.5 s", error["message"])
        self.assert_all_gone()
        env = dict(self.env, FAKE_CRASH_AT_START="1")  # the cache lists a, but it cannot start now
        with self.serve(data, env=env) as server:
            server.initialize()
            self.assertIn("fake://a/info", [r["uri"] for r in server.request("resources/list")["result"]["resources"]])
            error = server.request("resources/read", {"uri": "fake://a/info"})["error"]
            self.assertEqual(error["code"], -32001)
            self.assertIn("missing API key", error["message"])
            self.assertEqual(error["data"], {"server": "a"})

    def test_huge_tool_list(self):
        data = {"mcpServers": {"big": self.upstream("big", "--tools", "2000")}, "toolSearch": "off"}
        with self.serve(data, "--no-manager-tools") as server:
            server.initialize()
            names = self.tool_names(server)  # paged both upstream (50) and to the client (100)
            self.assertEqual(len(names), 2005)
            self.assertEqual(len(set(names)), 2005)
            self.assertEqual(names[-1], "big__t1999")
            self.assertEqual(text_of(server.call("big__t1234", {})), "t1234 called")

    def test_manager_tools(self):
        data = {"mcpServers": {"a": self.upstream("a", env={"API_TOKEN": "s3cret-value-123"}),
                               "b": self.upstream("b", "--token", "${MCPS_TEST_TOKEN}")}}
        log = os.path.join(self.dir, "wire.log")
        env = dict(self.env, MCPS_TEST_TOKEN="another-secret-456")
        with self.serve(data, "--log", log, env=env) as server:
            server.initialize()
            listed = server.call("mcpstudio__servers_list", {})  # routing it lists: no cache, so both start
            self.assertEqual(listed["structuredContent"], json.loads(text_of(listed)))
            servers = listed["structuredContent"]["servers"]
            self.assertEqual([(s["id"], s["status"], s["pid"]) for s in servers],
                             [("a", "running", self.pid_of("a")), ("b", "running", self.pid_of("b"))])
            self.assertEqual(servers[0]["env"], {"API_TOKEN": "***"})
            self.assertEqual(text_of(server.call("a__env", {"name": "API_TOKEN"})), "s3cret-value-123")
            result = server.call("mcpstudio__servers_stop", {"server_id": "a"})
            self.assertEqual(result["structuredContent"]["status"], "stopped-by-user")
            self.assertTrue(wait_until(lambda: not alive(self.pid_of("a"))))
            self.assertIsNone(result["structuredContent"]["pid"])
            failed = server.call("a__echo", {"text": "x"})
            self.assertTrue(failed["isError"])
            self.assertIn("stopped with servers_stop; start it with mcpstudio__servers_start", text_of(failed))
            self.tool_names(server)  # a listing does not start it either
            self.assertEqual(len(self.started()), 2)
            started = server.call("mcpstudio__servers_start", {"server_id": "a"})["structuredContent"]
            self.assertEqual(started["status"], "running")
            restarted = server.call("mcpstudio__servers_restart", {"server_id": "a"})["structuredContent"]
            self.assertNotEqual(restarted["pid"], started["pid"])
            self.assertEqual(restarted["restarts"], 1)
            self.assertGreaterEqual(restarted["uptimeSeconds"], 0)
            self.assertEqual(text_of(server.call("b__echo", {"text": "y"})), "b: y")
            lines = server.call("mcpstudio__server_logs", {"server_id": "b", "lines": 2})["structuredContent"]["lines"]
            self.assertEqual(len(lines), 2)
            everything = json.dumps(server.call("mcpstudio__servers_list", {})) + json.dumps(
                server.call("mcpstudio__server_logs", {"server_id": "b", "lines": 500}))
            self.assertIn("--token ***", everything)
            namespaces = server.call("mcpstudio__namespaces_list", {})["structuredContent"]
            self.assertEqual(namespaces, {"active": None, "chosenBy": "no namespaces in the config: every server",
                                          "namespaces": []})
            bad = server.call("mcpstudio__server_logs", {"server_id": "a", "lines": 0})
            self.assertTrue(bad["isError"])
            server.close()
        with open(log) as f:
            written = f.read()
        for secret in ("s3cret-value-123", "another-secret-456"):
            self.assertNotIn(secret, everything)
            self.assertNotIn(secret, written)
        self.assertIn("mcpstudio__servers_list", written)  # the log did record the traffic
        with self.serve(data, "--no-manager-tools") as server:
            server.initialize()
            self.assertFalse([n for n in self.tool_names(server) if n.startswith("mcpstudio")])

    def test_namespaces(self):
        data = {"mcpServers": {"a": self.upstream("a"), "b": self.upstream("b"), "c": self.upstream("c")},
                "namespaces": {"work": {"servers": ["a", "b"], "tools": {"deny": ["b__crash", "*__sleep"]}},
                               "home": ["c"]}}
        with self.serve(data, "--namespace", "work") as server:
            self.assertIn("result", server.initialize())
            names = self.tool_names(server)
            self.assertEqual(sorted({n.split("__")[0] for n in names}), ["a", "b", "mcpstudio"])
            self.assertIn("a__crash", names)
            self.assertNotIn("b__crash", names)
            self.assertNotIn("a__sleep", names)
            self.assertTrue(server.request("tools/call", {"name": "b__crash", "arguments": {}})["error"])
            info = server.call("mcpstudio__namespaces_list", {})["structuredContent"]
            self.assertEqual((info["active"], info["chosenBy"]), ("work", "--namespace work"))
            self.assertIn("namespace work (--namespace work); servers: a, b",
                          server.stderr_when(lambda text: "servers: a, b" in text))
            self.assertEqual([s["id"] for s in server.call("mcpstudio__servers_list", {})["structuredContent"]["servers"]],
                             ["a", "b"])
        for args, extra, fragment in (
                ((), {}, "no namespace chosen and the config has several (home, work)"),
                (("--namespace", "play"), {}, "unknown namespace \"play\""),
                ((), {"defaultNamespaceId": "nope"}, "unknown namespace \"nope\" in defaultNamespaceId")):
            with self.subTest(args=args, extra=extra):
                with self.serve(dict(data, **extra), *args) as server:
                    modern = server.request("tools/list", {"_meta": {  # 2026-07-28 clients get it too
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {}}})
                    for reply in (modern, server.initialize(), server.request("tools/list"), server.request("ping")):
                        self.assertEqual(reply["error"]["code"], -32602)
                        self.assertIn(fragment, reply["error"]["message"])
                    self.assertTrue(wait_until(lambda fragment=fragment: fragment in "".join(server.stderr)))
        with self.serve(dict(data, defaultNamespace="home")) as server:
            server.initialize()
            self.assertEqual(sorted({n.split("__")[0] for n in self.tool_names(server)}), ["c", "mcpstudio"])
        self.assertEqual(len(self.started()), 3)  # a, b, then c: each namespace started only its own

    def test_the_watcher_reloads_on_its_own(self):
        # Every --rescan seconds the file's stamp is looked at: a server removed from it is stopped.
        data = {"mcpServers": {"a": self.upstream("a"), "b": self.upstream("b")}}
        path = self.write(data)
        with McpProcess("serve", "--config", path, "--rescan", "0.2", env=self.env) as server:
            server.initialize()
            server.call("a__echo", {"text": "x"})
            a_pid = self.pid_of("a")
            del data["mcpServers"]["a"]
            self.write(data)
            self.assertTrue(wait_until(lambda: not alive(a_pid)), "the watcher did not reload")
            self.assertTrue(wait_until(lambda: "a__echo" not in self.tool_names(server)))
            self.assertIn("b__echo", self.tool_names(server))

    def test_reload(self):
        data = {"mcpServers": {"a": self.upstream("a"), "b": self.upstream("b")}}
        path = self.write(data)
        with McpProcess("serve", "--config", path, "--rescan", "0", env=self.env) as server:  # no watcher to race
            server.initialize()
            server.call("a__echo", {"text": "x"})
            server.call("b__echo", {"text": "x"})
            a_pid, b_pid = self.pid_of("a"), self.pid_of("b")
            # Edit: b changes, a stays, c is new; config_reload restarts b only.
            data["mcpServers"]["b"] = self.upstream("b", "--only", "echo")
            data["mcpServers"]["c"] = self.upstream("c")
            self.write(data)
            report = server.call("mcpstudio__config_reload", {})["structuredContent"]
            self.assertEqual((report["added"], report["restarted"], report["unchanged"], report["removed"]),
                             (["c"], ["b"], ["a"], []))
            self.assertTrue(alive(a_pid))
            self.assertTrue(wait_until(lambda: not alive(b_pid)))
            self.assertTrue(wait_until(lambda: server.notifications_of("notifications/tools/list_changed")))
            self.assertTrue(wait_until(lambda: len(self.started()) == 3))  # b was running: it starts again
            names = self.tool_names(server)
            self.assertIn("c__echo", names)
            self.assertNotIn("b__sleep", names)
            # A broken edit changes nothing and says why.
            with open(path, "w") as f:
                f.write("{ not json")
            result = server.call("mcpstudio__config_reload", {})
            self.assertTrue(result["isError"])
            self.assertIn("invalid JSON", text_of(result))
            self.assertEqual(text_of(server.call("a__echo", {"text": "y"})), "a: y")
            # A reload removes a: it is stopped.
            del data["mcpServers"]["a"]
            self.write(data)
            server.call("mcpstudio__config_reload", {})
            self.assertTrue(wait_until(lambda: not alive(a_pid)))
            self.assertTrue(wait_until(lambda: "a__echo" not in self.tool_names(server)))
            # SIGHUP reloads too (and does not stop the server).
            data["mcpServers"]["d"] = self.upstream("d")
            with open(path, "w") as f:
                json.dump(data, f)
            server.proc.send_signal(signal.SIGHUP)
            self.assertTrue(wait_until(lambda: "d__echo" in self.tool_names(server)))
            self.assertIsNone(server.proc.poll())
            # Names listed before a reload that removed their server: unknown (the reload refreshed the
            # routes) or -32000, never the old one.
            uris = [r["uri"] for r in server.request("resources/list")["result"]["resources"]]
            self.assertIn("fake://d/info", uris)
            del data["mcpServers"]["d"]
            self.write(data)
            server.call("mcpstudio__config_reload", {})
            error = server.request("tools/call", {"name": "d__echo", "arguments": {"text": "x"}})["error"]
            self.assertEqual(error["code"], -32602, error)
            self.assertIn("Unknown tool: d__echo", error["message"])
            self.assertEqual(server.request("resources/read", {"uri": "fake://d/info"})["error"]["code"], -32000)
            # A reload that would leave no namespace chosen is refused; so is a broken file on SIGHUP.
            self.write(dict(data, namespaces={"x": ["b"], "y": ["c"]}))
            result = server.call("mcpstudio__config_reload", {})
            self.assertTrue(result["isError"])
            self.assertIn("no namespace chosen", text_of(result))
            self.assertEqual(text_of(server.call("c__echo", {"text": "z"})), "c: z")
            with open(path, "w") as f:
                f.write("{ not json")
            server.proc.send_signal(signal.SIGHUP)
            self.assertTrue(wait_until(lambda: "previous configuration stays in use" in "".join(server.stderr)))
            self.assertNotIn("Traceback", "".join(server.stderr))

    def test_nothing_survives_exit(self):
        data = {"mcpServers": {"a": self.upstream("a"), "b": self.upstream("b", eager=True)}}
        self.cache_tools(data, "a__echo")  # cached: only the eager one starts at initialize
        for how in ("eof", "sigterm", "sigkill"):
            with self.subTest(how=how):
                if os.path.exists(self.pids):
                    os.remove(self.pids)
                with self.serve(data) as server:
                    server.initialize()
                    self.assertTrue(wait_until(lambda: len(self.started()) == 1))  # b is eager
                    server.call("a__echo", {"text": "x"})
                    self.assertEqual(len(self.started()), 2)
                    for pid in [p for pair in self.started() for p in pair]:
                        self.assertTrue(alive(pid))
                    if how == "eof":
                        self.assertEqual(server.close(), 0)
                    else:
                        server.proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGKILL)
                        server.proc.wait(WAIT)
                    # Each server and the child it started are gone; after SIGKILL, the watchdog saw to it.
                    self.assert_all_gone()

    def test_status_command(self):
        data = {"mcpServers": {"a": self.upstream("a", "--token", "${MCPS_TEST_TOKEN}"),
                               "bad": self.upstream("bad", "--crash-at-start")},
                "namespaces": {"all": ["a", "bad"]}}
        path = self.write(data)
        env = dict(self.env, MCPS_TEST_TOKEN="status-secret-789")
        run = lambda *args: subprocess.run(SERVER + ["status", "--config", path] + list(args), env=env,
                                           capture_output=True, text=True, timeout=60)
        proc = run()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("namespace: all (the only namespace in the config)", proc.stdout)
        self.assertRegex(proc.stdout, r"\na +- \(not cached yet\) +\S+ .*--token \*\*\*")
        self.assertNotIn("status-secret-789", proc.stdout + proc.stderr)
        proc = run("--check")
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertRegex(proc.stdout, r"\na +ok, 5 tools, started in \d+ ms")
        self.assertRegex(proc.stdout, r"\nbad +failed: .*: fake: cannot start: missing API key \(it exited with code 3\)")
        proc = run()
        self.assertRegex(proc.stdout, r"\na +5 \(cached \d{4}-\d\d-\d\d \d\d:\d\d\)")
        self.assert_all_gone()
        proc = subprocess.run(SERVER + ["check", "--config", path], env=env, capture_output=True, text=True,
                              timeout=60)
        self.assertIn("MCP servers", proc.stdout)
        self.assertIn("a ", proc.stdout)


# --------------------------------------------------------------------------
# Interop with real peers (installed by .ci/run; skipped when absent)
# --------------------------------------------------------------------------

SDK_PYTHON = os.environ.get("MCPSTUDIO_SDK_PYTHON", "")
INSPECTOR = os.environ.get("MCPSTUDIO_INSPECTOR", "")


_SDK_PROBE = []  # the answer, once asked


def _sdk_available() -> bool:
    """Whether MCPSTUDIO_SDK_PYTHON can import mcp. Asked once, and never in a fake server this module
    runs (importing mcp takes a second; a fake server must start in milliseconds)."""
    if getattr(sys, "mcpstudio_test_child", False) or not SDK_PYTHON or not os.path.exists(SDK_PYTHON):
        return False
    if not _SDK_PROBE:
        _SDK_PROBE.append(subprocess.run([SDK_PYTHON, "-c", "import mcp"], capture_output=True).returncode == 0)
    return _SDK_PROBE[0]


class AggregatorReliabilityTests(AggregatorCase):
    """Issue 11 (aggregator part): slow, crashing and hostile upstreams, caches and configs."""

    upstream = AggregatorTests.upstream
    write = AggregatorTests.write
    serve = AggregatorTests.serve
    started = AggregatorTests.started
    tool_names = AggregatorTests.tool_names
    assert_all_gone = AggregatorTests.assert_all_gone
    cache_tools = AggregatorTests.cache_tools

    def test_large_answer_is_read_in_linear_time(self):
        # A 50 MB answer on one line is read and forwarded quickly (it was quadratic: `bytes +=` per chunk).
        data = {"mcpServers": {"big": self.upstream("big", "--reply-mb", "50")}}
        with self.serve(data) as server:
            server.initialize()
            server.call("big__echo", {"text": "warm up"}, timeout=30)  # started, first answer read
            started, cpu = time.monotonic(), process_cpu(server.proc.pid)
            result = server.call("big__echo", {"text": "x"}, timeout=60)
            self.assertEqual(len(text_of(result)), 50000000)
            # CPU seconds of mcpstudio itself, which machine load does not inflate as it does wall time (CI saw
            # 9.5 s of wall time for a linear read, 12 suites at once on 2 cores, under coverage); a quadratic
            # read copies some 19 GB here.
            if cpu is not None:
                self.assertLess(process_cpu(server.proc.pid) - cpu, 6)
            else:  # no /proc (macOS): wall time
                self.assertLess(time.monotonic() - started, 15)

    def test_deeply_nested_line_does_not_lose_the_reply_after_it(self):
        # A line nested 200,000 deep is skipped (no RecursionError); the reply in the same chunk still arrives.
        data = {"mcpServers": {"deep": self.upstream("deep", "--deep-before-reply")}}
        with self.serve(data) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("deep__echo", {"text": "hi"}, timeout=10)), "deep: hi")
            self.assertEqual(text_of(server.call("deep__echo", {"text": "again"}, timeout=10)), "deep: again")
            logs = json.loads(text_of(server.call("mcpstudio__server_logs", {"server_id": "deep"})))["lines"]
            self.assertTrue(any("not JSON-RPC: [[[" in line for line in logs), logs)


    def test_listing_never_waits_on_a_slow_server(self):
        # tools/list answers with what is ready; the slow server's tools follow with list_changed.
        data = {"mcpServers": {"a": self.upstream("a"), "slow": self.upstream("slow", "--slow-start", "5")}}
        with self.serve(data, env=dict(self.env, MCPSTUDIO_LIST_WAIT="2")) as server:
            server.initialize()
            self.assertTrue(wait_until(lambda: self.started()))  # a is up, and announced:
            self.assertTrue(wait_until(lambda: server.notifications_of("notifications/tools/list_changed")))
            time.sleep(0.2)
            before = len(server.notifications_of("notifications/tools/list_changed"))
            started = time.monotonic()
            names = self.tool_names(server)
            self.assertLess(time.monotonic() - started, 3.5)  # was: 5 s, when clients give up
            self.assertIn("a__echo", names)
            self.assertNotIn("slow__echo", names)
            self.assertTrue(wait_until(
                lambda: len(server.notifications_of("notifications/tools/list_changed")) > before))
            self.assertIn("slow__echo", self.tool_names(server))
            self.assertEqual(text_of(server.call("slow__echo", {"text": "up"})), "slow: up")

    def test_a_call_waits_for_the_slow_server_that_owns_it(self):
        # A client that calls a tool it knows (from a cache, or its user) before the slow server has listed
        # it: the call waits for that server, not "Unknown tool".
        data = {"mcpServers": {"a": self.upstream("a"), "slow": self.upstream("slow", "--slow-start", "4")}}
        with self.serve(data, env=dict(self.env, MCPSTUDIO_LIST_WAIT="1")) as server:
            server.initialize()
            self.assertNotIn("slow__echo", self.tool_names(server))
            self.assertEqual(text_of(server.call("slow__echo", {"text": "up"})), "slow: up")
            reply = server.request("tools/call", {"name": "slow__nope", "arguments": {}})
            self.assertEqual(reply["error"]["code"], -32602)
            self.assertIn("Unknown tool: slow__nope", reply["error"]["message"])

    def test_a_first_listing_is_cached_even_if_the_client_leaves(self):
        # The client closes stdin while a slow server still starts: it is cached before mcpstudio exits,
        # so the next run lists its tools at once, without starting anything.
        data = {"mcpServers": {"slow": self.upstream("slow", "--slow-start", "6")}}
        with self.serve(data, env=dict(self.env, MCPSTUDIO_LIST_WAIT="2")) as server:
            server.initialize()
            self.assertNotIn("slow__echo", self.tool_names(server))
            self.assertEqual(server.close(), 0)
        self.assert_all_gone()
        os.remove(self.pids)
        with self.serve(data) as server:
            server.initialize()
            started = time.monotonic()
            self.assertIn("slow__echo", self.tool_names(server))
            self.assertLess(time.monotonic() - started, 1.5)
            self.assertEqual(self.started(), [])

    def test_first_crash_restarts_at_once_and_uncached_servers_start_together(self):
        # Six servers with nothing cached start at once (not four at a time): all six launch before the first
        # is up (3 s after its launch).
        launches = os.path.join(self.dir, "launches")
        data = {"mcpServers": {"s%d" % i: self.upstream("s%d" % i, "--slow-start", "3", "--launch-file", launches)
                               for i in range(6)}}
        data["mcpServers"]["a"] = self.upstream("a")
        with self.serve(data) as server:
            server.initialize()
            self.assertTrue(wait_until(lambda: len(self.started()) == 7))
            with open(launches) as f:
                times = [float(line) for line in f]
            self.assertEqual(len(times), 6)
            self.assertLess(max(times) - min(times), 2.8, times)
            # A first crash restarts at once; only a second one in a row backs off.
            server.call("a__crash", {})
            self.assertEqual(text_of(server.call("a__echo", {"text": "1"})), "a: 1")

            def logs():
                return json.loads(text_of(server.call("mcpstudio__server_logs", {"server_id": "a"})))["lines"]
            self.assertFalse([line for line in logs() if "backoff" in line])
            server.call("a__crash", {})
            self.assertEqual(text_of(server.call("a__echo", {"text": "2"})), "a: 2")
            # the backoff is 1 s from the crash; the log gives what is left of it when the start begins
            self.assertTrue([line for line in logs() if re.search(r"restarting after a backoff of (1\.0|0\.[5-9]) s", line)],
                            logs())


    def test_a_bad_tools_cache_is_ignored(self):
        # A FIFO, a device, or JSON of the wrong shape at the cache's path: logged and ignored, never a hang
        # or a -32603; the server is started and listed instead (and the cache written afresh).
        data = {"mcpServers": {"a": self.upstream("a", "--only", "echo")}}
        with self.serve(data) as server:
            server.initialize()
            self.assertIn("a__echo", self.tool_names(server))
        folder = os.path.join(self.dir, "cache", "mcpstudio")
        path = os.path.join(folder, [n for n in os.listdir(folder) if n.startswith("server-")][0])

        def fifo():
            os.mkfifo(path)

        def zero():
            os.symlink("/dev/zero", path)

        def text(body):
            def make():
                with open(path, "w") as f:
                    f.write(body)
            return make
        cases = [("fifo", fifo, "not a regular file"), ("/dev/zero", zero, "not a regular file"),
                 ("array", text("[]"), "holds a JSON array"), ("string", text('"s"'), "holds a JSON string"),
                 ("deep", text("[" * 100000 + "]" * 100000), "ignoring the tools cache"),
                 ("tools not named", text('{"format": 1, "tools": [1]}'), "`tools` is not a list")]
        for label, make, logged in cases:
            with self.subTest(label):
                os.remove(path)
                make()
                with self.serve(data) as server:
                    server.initialize()
                    started = time.monotonic()
                    result = server.request("tools/list", timeout=10)
                    self.assertLess(time.monotonic() - started, 5)
                    self.assertIn("a__echo", [t["name"] for t in result["result"]["tools"]])
                    self.assertEqual(server.close(), 0)
                    self.assertTrue(any(logged in line for line in server.stderr), server.stderr)
                self.assertTrue(os.path.isfile(path) and not os.path.islink(path))  # written afresh
        proc = subprocess.run(SERVER + ["status", "--config", self.write(data)], env=self.env,
                              capture_output=True, text=True, timeout=WAIT)
        self.assertRegex(proc.stdout, r"\na +1 \(cached")
        os.remove(path)
        fifo()
        proc = subprocess.run(SERVER + ["status", "--config", self.write(data)], env=self.env,
                              capture_output=True, text=True, timeout=WAIT)  # `status` does not hang on it
        self.assertIn("not cached yet", proc.stdout)


    def test_a_deeply_nested_config_does_not_stop_reloads(self):
        # A config rewritten as a 100,000-deep array is refused with a clear error; a valid file after it is read.
        data = {"mcpServers": {"a": self.upstream("a", "--only", "echo")}}
        path = self.write(data)
        with McpProcess("serve", "--config", path, "--rescan", "0.2", env=self.env) as server:
            server.initialize()
            self.assertIn("a__echo", self.tool_names(server))
            with open(path, "w") as f:
                f.write("[" * 100000 + "]" * 100000)
            self.assertTrue(wait_until(lambda: "nested too deeply" in "".join(server.stderr)), server.context())
            time.sleep(0.5)
            data["mcpServers"]["c"] = self.upstream("c", "--only", "echo")
            self.write(data)
            self.assertTrue(wait_until(lambda: "c__echo" in self.tool_names(server), interval=0.3), server.context())
            self.assertNotIn("Traceback", "".join(server.stderr))

    def test_a_batch_with_subscriptions_listen_answers_its_other_members(self):
        # subscriptions/listen lasts as long as the client listens: the batch's other members are answered now.
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
        data = {"mcpServers": {"a": self.upstream("a", "--only", "echo")}}
        with self.serve(data) as server:
            server.send([{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
                          "params": {"_meta": meta, "notifications": {"toolsListChanged": True}}},
                         {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}},
                         {"jsonrpc": "2.0", "id": 3, "method": "prompts/list", "params": {"_meta": meta}}])
            self.assertIn("mcpstudio__servers_list", [t["name"] for t in server.wait_response(2)["result"]["tools"]])
            self.assertIn("a__greet", [p["name"] for p in server.wait_response(3)["result"]["prompts"]])
            self.assertNotIn(1, server.responses)  # still listening
            self.assertTrue(server.notifications_of("notifications/subscriptions/acknowledged"))

    def test_missing_input_schema_and_names_of_manager_tools(self):
        # An upstream tool without inputSchema gets {"type": "object"}; a config tool or a server's tool named
        # like a manager tool is renamed, and every listed tool is callable.
        data = {"mcpServers": {"mcpstudio": self.upstream("m", "--only", "echo,servers_list",
                                                          "--extra-tool", "servers_list")},
                "tools": [{"name": "mcpstudio__servers_list", "command": "echo mine"}]}
        with self.serve(data) as server:
            server.initialize()
            self.assertTrue(wait_until(lambda: "mcpstudio__echo" in self.tool_names(server), interval=0.3))
            tools = server.request("tools/list")["result"]["tools"]
            names = [t["name"] for t in tools]
            self.assertEqual(len(names), len(set(names)), names)
            for tool in tools:
                self.assertIsInstance(tool.get("inputSchema"), dict, tool)
                self.assertEqual(tool["inputSchema"].get("type"), "object", tool)
            self.assertEqual(names.count("mcpstudio__servers_list"), 1)
            listed = json.loads(text_of(server.call("mcpstudio__servers_list", {})))
            self.assertEqual([s["id"] for s in listed["servers"]], ["mcpstudio"])
            texts = sorted(text_of(server.call(name, {})) for name in names
                           if name.startswith("mcpstudio__servers_list_"))
            self.assertEqual(texts, sorted(["servers_list called", "mine\n"]))

    def test_cancel_while_an_upstream_is_starting(self):
        # A call cancelled while its server starts gets no answer; the start goes on, and the next call uses it.
        data = {"mcpServers": {"slow": self.upstream("slow", "--slow-start", "2")}}
        self.cache_tools(data, "slow__echo")
        with self.serve(data, env=dict(self.env, MCPSTUDIO_LIST_WAIT="2")) as server:
            server.initialize()
            self.tool_names(server)
            server.send({"jsonrpc": "2.0", "id": "c1", "method": "tools/call",
                         "params": {"name": "slow__echo", "arguments": {"text": "x"}}})
            time.sleep(0.5)
            server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c1"}})
            self.assertEqual(text_of(server.call("slow__echo", {"text": "after"})), "slow: after")
            self.assertNotIn("c1", server.responses)
            self.assertEqual(len(self.started()), 1)  # started once
            status = json.loads(text_of(server.call("mcpstudio__servers_list", {})))["servers"][0]
            self.assertEqual(status["status"], "running")


class ClientFeatureTests(AggregatorCase):
    """Issue 18: an upstream's requests to the client go to mcpstudio's client and back, cancels too."""

    def serve(self, capabilities):
        config = os.path.join(self.dir, "agg.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"fake": {"command": PY, "args": [self.fake, "--name", "fake", "--ask"]}}}, f)
        server = McpProcess("serve", "--config", config, env=self.env)
        server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                                      "clientInfo": {"name": "test", "version": "0"}})
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return server

    def asked(self, server, count=1):
        """The `count`th request mcpstudio sent the client (a message with a method and an id)."""
        def requests():
            return [m for m in list(server.notifications) if "id" in m]
        self.assertTrue(wait_until(lambda: len(requests()) >= count), server.context())
        return requests()[count - 1]

    def test_a_request_reaches_the_client_and_its_answer_the_server(self):
        with self.serve({"roots": {"listChanged": True}}) as server:
            server.send({"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": {"name": "fake__ask", "arguments": {}}})
            asked = self.asked(server)
            self.assertEqual(asked["method"], "roots/list")
            self.assertFalse(asked["id"].startswith("ask-"))  # mcpstudio's own id, mapped back to the server's
            server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": "file:///client/root"}]}})
            answer = json.loads(text_of(server.wait_response("c1")["result"]))
            self.assertTrue(answer.pop("id").startswith("ask-"))
            self.assertEqual(answer, {"jsonrpc": "2.0", "result": {"roots": [{"uri": "file:///client/root"}]}})
            # The server gives up on a second question: the client is told, and a late answer goes nowhere.
            server.send({"jsonrpc": "2.0", "id": "c2", "method": "tools/call",
                         "params": {"name": "fake__ask", "arguments": {"cancel_after": 0.3}}})
            asked = self.asked(server, 2)
            self.assertTrue(wait_until(lambda: [n for n in server.notifications_of("notifications/cancelled")
                                                if n["params"]["requestId"] == asked["id"]]), server.context())
            self.assertEqual(text_of(server.wait_response("c2")["result"]), "gave up")
            server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}})
            self.assertEqual(text_of(server.call("fake__echo", {"text": "still fine"})), "fake: still fine")

    def test_log_level_reaches_every_server(self):
        # logging/setLevel is passed on to a running server, and to one started after it was set.
        levels = [os.path.join(self.dir, "levels-%s" % name) for name in ("a", "b")]
        config = os.path.join(self.dir, "agg.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {name: {"command": PY, "args": [self.fake, "--name", name, "--level-file", path]}
                                      for name, path in zip(("a", "b"), levels)}}, f)
        with McpProcess("serve", "--config", config, env=self.env) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("a__echo", {"text": "x"})), "a: x")
            server.call("mcpstudio__servers_stop", {"server_id": "b"})
            self.assertEqual(server.request("logging/setLevel", {"level": "debug"})["result"], {})
            self.assertTrue(wait_until(lambda: os.path.exists(levels[0])))
            server.call("mcpstudio__servers_start", {"server_id": "b"})
            self.assertEqual(text_of(server.call("b__echo", {"text": "y"})), "b: y")
            for path in levels:
                with open(path) as f:
                    self.assertEqual(f.read(), "debug\n")

    def test_resource_subscriptions_pass_through(self):
        # resources/subscribe goes to the server that lists the URI, and its resources/updated comes back.
        with self.serve({}) as server:
            reply = server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                  "clientInfo": {"name": "t", "version": "0"}})
            self.assertTrue(reply["result"]["capabilities"]["resources"]["subscribe"])
            uris = [r["uri"] for r in server.request("resources/list")["result"]["resources"]]
            self.assertIn("fake://fake/info", uris)
            self.assertEqual(server.request("resources/subscribe", {"uri": "fake://fake/info"})["result"], {})
            self.assertTrue(wait_until(lambda: server.notifications_of("notifications/resources/updated")), server.context())
            self.assertEqual(server.notifications_of("notifications/resources/updated")[0]["params"], {"uri": "fake://fake/info"})
            self.assertEqual(server.request("resources/unsubscribe", {"uri": "fake://fake/info"})["result"], {})
            self.assertEqual(server.request("resources/subscribe", {"uri": "fake://nobody/x"})["error"]["code"], -32002)

    def test_a_client_without_the_capability_is_not_asked(self):
        # The server's request gets -32601 with the reason, as from a client that offers no roots.
        with self.serve({}) as server:
            answer = json.loads(text_of(server.call("fake__ask", {})))
            self.assertEqual(answer["error"]["code"], -32601)
            self.assertIn("roots/list", answer["error"]["message"])
            self.assertEqual([m for m in server.notifications if "id" in m], [])


class UpstreamFramingTests(unittest.TestCase):
    """The upstream stdout reader in process: lines across chunks, oversized lines, stderr."""

    def run_protocol(self, chunks, limit):
        """Feed `chunks` to an _UpstreamProtocol; return (messages, notes, {request id: why it failed})."""
        import asyncio
        import types
        from unittest import mock
        messages, notes = [], []

        class Client:  # what the reader hands lines and failures to
            name = "up"
            failed = {}

            def received(self, line):
                messages.append(json.loads(line))

            def fail(self, request_id, code, text):
                self.failed[request_id] = text

        client = Client()
        upstream = types.SimpleNamespace(client=client, server_log=types.SimpleNamespace(
            note=notes.append, stderr_line=notes.append))

        async def go():
            with mock.patch.object(mcpstudio, "MAX_MESSAGE", limit):
                protocol = mcpstudio._UpstreamProtocol(upstream)
                for fd, chunk in chunks:
                    protocol.pipe_data_received(fd, chunk)
        asyncio.run(go())
        return messages, notes, client.failed

    def test_table(self):
        big = b'{"jsonrpc": "2.0", "id": 1, "result": {"text": "' + b"x" * 500 + b'"}}'
        ts = b'{"result": {"text": "' + b"y" * 500 + b'"}, "jsonrpc": "2.0", "id": 2}'
        cases = [  # (chunks of stdout, limit) -> (messages, fragment of a note, failed ids)
            ([b'{"id": 1}\n{"id"', b': 2}\n'], 100, [{"id": 1}, {"id": 2}], None, ()),
            ([b'{"id"', b': 1', b'}\n\n  \n'], 100, [{"id": 1}], None, ()),
            ([big[:100], big[100:], b'\n{"id": 7}\n'], 200, [{"id": 7}], "the answer to request 1", (1,)),
            ([big + b'\n{"id": 7}\n'], 200, [{"id": 7}], "the answer to request 1", (1,)),
            ([ts[:300], ts[300:] + b'\n'], 200, [], "the answer to request 2", (2,)),
            ([b'{"method": "x", "params": {"id": 1, "d": "' + b"z" * 300 + b'"}}\n{"id": 8}\n'], 200,
             [{"id": 8}], "skipped a message over 200 bytes on stdout", ()),
        ]
        for chunks, limit, expected, note, failed in cases:
            with self.subTest(chunks=[c[:40] for c in chunks]):
                messages, notes, outcomes = self.run_protocol([(1, c) for c in chunks], limit)
                self.assertEqual(messages, expected)
                if note:
                    self.assertTrue(any(note in n for n in notes), notes)
                for request_id in failed:  # the request whose answer was too large fails, with a clear message
                    self.assertIn("answered with a message over %d bytes" % limit, outcomes[request_id])
                self.assertEqual(sorted(outcomes), sorted(failed))

    def test_many_chunks_of_one_line_take_linear_time(self):
        # 2,000 chunks of 16 KiB make one 32 MB line: joined once, not copied per chunk.
        line = b'{"id": 1, "result": {"t": "' + b"a" * (32 << 20) + b'"}}\n'
        chunks = [(1, line[i:i + (16 << 10)]) for i in range(0, len(line), 16 << 10)]
        started = time.monotonic()
        messages, _, _ = self.run_protocol(chunks, 64 << 20)
        self.assertEqual(len(messages), 1)
        self.assertLess(time.monotonic() - started, 5)


class _PausedClient(McpProcess):
    """An McpProcess whose reading of stdout can be paused (`reading.clear()`): a client that falls behind."""

    def __init__(self, *args, **keys):
        self.reading = threading.Event()
        self.reading.set()
        super().__init__(*args, **keys)

    def _read_stdout(self):
        while True:
            self.reading.wait()
            line = self.proc.stdout.readline()
            if not line:
                return
            with self.lock:
                self.stdout_lines.append(line)
                message = json.loads(line)
                if "method" in message:
                    self.notifications.append(message)
                else:
                    self.responses[message.get("id")] = message
                self.lock.notify_all()


class AggregatorReviewTests(AggregatorCase):
    """The aggregator review's findings: reloads and permissions, loose names, list_changed bursts, the
    --http token, and upstream notifications while the client is behind."""

    upstream = AggregatorTests.upstream
    write = AggregatorTests.write
    serve = AggregatorTests.serve
    tool_names = AggregatorTests.tool_names

    def call_error(self, server, name):
        return server.request("tools/call", {"name": name, "arguments": {}}).get("error") or {}

    def test_reload_denials_apply_to_the_next_call(self):
        # Tools a reload denies (deniedTools, toolPermissions, a server's and a namespace's tools.deny) answer
        # -32006 or "unknown" on the very next call, with no tools/list in between (the old listing ran them).
        data = {"mcpServers": {"a": self.upstream("a"), "b": self.upstream("b")}}
        path = self.write(data)
        with McpProcess("serve", "--config", path, "--rescan", "0", env=self.env) as server:
            server.initialize()
            self.assertIn("a__crash", self.tool_names(server))
            self.assertEqual(text_of(server.call("a__echo", {"text": "x"})), "a: x")
            data["mcpServers"]["a"] = dict(self.upstream("a"), deniedTools=["echo"])
            self.write(data)
            server.call("mcpstudio__config_reload", {})
            error = self.call_error(server, "a__echo")
            self.assertEqual(error.get("code"), -32006, error)
            self.assertIn("deniedTools", error["message"])
            data["toolPermissions"] = [{"namespaceId": "all", "serverId": "b", "toolName": "echo", "enabled": False}]
            data["namespaces"] = {"all": {"servers": ["a", "b"], "tools": {"deny": ["b__env"]}}}
            data["mcpServers"]["a"] = dict(self.upstream("a"), deniedTools=["echo"], tools={"deny": ["sleep"]})
            self.write(data)
            server.proc.send_signal(signal.SIGHUP)  # the SIGHUP path too
            self.assertTrue(wait_until(lambda: self.call_error(server, "b__echo").get("code") == -32006, interval=0.2),
                            server.context())
            self.assertEqual(self.call_error(server, "b__env")["code"], -32602)    # the namespace's filter
            self.assertEqual(self.call_error(server, "a__sleep")["code"], -32602)  # the server's filter
            self.assertEqual(text_of(server.call("a__env", {"name": "NOPE"})), "<unset>")  # the rest still runs

    def test_denied_name_never_reaches_its_dash_underscore_twin(self):
        # With `foo-bar` denied and `foo_bar` allowed, calling `s__foo-bar` is refused (-32006), never runs
        # `foo_bar`; the loose respelling still reaches a tool that is the only match (`git_status`).
        data = {"mcpServers": {"s": dict(self.upstream("s", "--more-tools", "foo-bar,foo_bar,git-status"),
                                         deniedTools=["foo-bar"])}}
        with self.serve(data) as server:
            server.initialize()
            names = self.tool_names(server)
            self.assertIn("s__foo_bar", names)
            self.assertNotIn("s__foo-bar", names)
            error = self.call_error(server, "s__foo-bar")
            self.assertEqual(error.get("code"), -32006, error)
            self.assertEqual(text_of(server.call("s__foo_bar", {})), "foo_bar called")
            self.assertEqual(text_of(server.call("s__git_status", {})), "git-status called")

    def test_list_changed_burst_is_coalesced(self):
        # 500 list_changed notifications in one burst cost a few tools/list requests (one in flight, one
        # pending), not 500.
        lists = os.path.join(self.dir, "lists")
        data = {"mcpServers": {"s": self.upstream("s", "--more-tools", "burst", "--list-file", lists)}}
        with self.serve(data) as server:
            server.initialize()
            self.assertIn("s__burst", self.tool_names(server))

            def count():
                with open(lists) as f:
                    return len(f.read().split())
            before = count()
            self.assertEqual(text_of(server.call("s__burst", {"count": 500})), "burst called")
            self.assertTrue(wait_until(lambda: count() > before))
            time.sleep(1.5)  # the listings the burst causes are done by then (each takes milliseconds)
            self.assertLessEqual(count() - before, 4, server.context())
            self.assertEqual(text_of(server.call("s__echo", {"text": "ok"})), "s: ok")

    def test_http_token_is_not_inherited(self):
        # `mcpstudio --http` with $MCPSTUDIO_HTTP_TOKEN: a tool (`printenv`) does not see the token, though it
        # sees the rest of the environment.
        token = "tok-9876-secret"
        env = dict(os.environ, MCPSTUDIO_HTTP_TOKEN=token, FIXB_MARKER="visible")
        auth = {"Authorization": "Bearer %s" % token}
        with HttpServerProcess("printenv", "{name}", env=env) as server:
            def run(name):
                status, _, text = server.modern("tools/call", {"name": "printenv", "arguments": {"name": name}},
                                                headers=auth)
                self.assertEqual(status, 200, text)
                return server.messages(text)[-1]["result"]
            self.assertEqual(text_of(run("FIXB_MARKER")).strip(), "visible")
            result = run("MCPSTUDIO_HTTP_TOKEN")
            self.assertNotIn(token, json.dumps(result))
            self.assertTrue(result.get("isError"), result)  # printenv exits 1: the variable is not set

    @unittest.skipUnless(sys.platform.startswith("linux"), "reads /proc")
    def test_log_flood_while_client_does_not_read(self):
        # An upstream floods 100 MB of 1 KB log lines while the client reads nothing: mcpstudio drops them
        # (says how many on stderr) and its memory stays bounded; once the client reads again, calls work.
        done = os.path.join(self.dir, "flood-done")
        data = {"mcpServers": {"f": self.upstream("f", "--more-tools", "flood", "--flood-file", done)}}
        with _PausedClient("serve", "--config", self.write(data), env=self.env) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("f__echo", {"text": "up"})), "f: up")
            base = rss_kib(server.proc.pid)
            server.reading.clear()
            server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                         "params": {"name": "f__flood", "arguments": {"lines": 100000}}})
            self.assertTrue(wait_until(lambda: os.path.exists(done), timeout=60, interval=0.2), server.context())
            time.sleep(1.0)  # what is left in the pipe is read
            grown = rss_kib(server.proc.pid) - base
            self.assertLess(grown, 48 * 1024, "grew %d KiB" % grown)  # was: > 100 MB, all of it queued
            server.reading.set()
            self.assertIn("result", server.wait_response(7))  # the reply was never dropped
            self.assertEqual(text_of(server.call("f__echo", {"text": "again"}, timeout=30)), "f: again")
            self.assertTrue(wait_until(lambda: re.search(r"\d+ log and progress notifications were dropped|"
                                                         r"sends more than 50 log or progress notifications a second",
                                                         "".join(server.stderr))), server.context())


@unittest.skipUnless(_sdk_available(), "the official MCP Python SDK is not installed (set MCPSTUDIO_SDK_PYTHON)")
class PythonSdkInteropTests(ScratchDir):
    def run_client(self, code: str, **env) -> dict:
        """Run `code` under the SDK's Python; it prints one JSON object as its last line."""
        proc = subprocess.run([SDK_PYTHON, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=60, env=dict(os.environ, MCPSTUDIO=MODULE, SERVER_PY=PY, **env))
        self.assertEqual(proc.returncode, 0, "client failed:\n%s\n%s" % (proc.stdout, proc.stderr[-3000:]))
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def test_stdio_client_session(self):
        # stdio_client + ClientSession initializes, lists and calls the echo tool, with progress.
        out = self.run_client("""
            import anyio, json, os
            from mcp import ClientSession, StdioServerParameters, stdio_client

            async def main():
                params = StdioServerParameters(command=os.environ["SERVER_PY"],
                                               args=[os.environ["MCPSTUDIO"], "echo", "{message # what to say}"])
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write) as session:
                        init = await session.initialize()
                        tools = await session.list_tools()
                        result = await session.call_tool("echo", {"message": "from the sdk"})
                        bad = await session.call_tool("echo", {})
                        print(json.dumps({
                            "version": init.protocol_version, "server": init.server_info.name,
                            "tools": [t.name for t in tools.tools],
                            "schema": tools.tools[0].input_schema,
                            "text": result.content[0].text, "isError": result.is_error,
                            "bad": bad.is_error,
                        }))
            anyio.run(main)
            """)
        self.assertEqual(out["version"], "2025-11-25")
        self.assertEqual(out["server"], "mcpstudio")
        self.assertEqual(out["tools"], ["echo"])
        self.assertEqual(out["schema"]["properties"]["message"]["description"], "what to say")
        self.assertEqual(out["text"], "from the sdk\n")
        self.assertFalse(out["isError"])
        self.assertTrue(out["bad"])

    def test_script_mode(self):
        # The SDK lists and calls a script tool and reads a state resource from examples/scripts.
        out = self.run_client("""
            import anyio, json, os
            from mcp import ClientSession, StdioServerParameters, stdio_client

            async def main():
                params = StdioServerParameters(
                    command=os.environ["SERVER_PY"],
                    args=[os.environ["MCPSTUDIO"], "--root-directory", os.environ["SCRIPTS"]],
                    env={"MCPSTUDIO_COUNTER_FILE": os.environ["COUNTER"], "XDG_CACHE_HOME": os.environ["CACHE"],
                         "PATH": os.environ["PATH"]})
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write) as session:
                        init = await session.initialize()
                        tools = await session.list_tools()
                        calc = await session.call_tool("math__calc", {"operation": "add", "a": 2, "b": 3})
                        await session.call_tool("counter", {"increment": 2})
                        resources = await session.list_resources()
                        state = await session.read_resource("mcpd://counter/state")
                        print(json.dumps({
                            "tools": sorted(t.name for t in tools.tools),
                            "structured": calc.structured_content,
                            "resources": [str(r.uri) for r in resources.resources],
                            "state": json.loads(state.contents[0].text),
                        }))
            anyio.run(main)
            """, SCRIPTS=os.path.join(HERE, "examples", "scripts"), COUNTER=os.path.join(self.dir, "c.json"),
            CACHE=os.path.join(self.dir, "cache"))
        self.assertEqual(out["tools"], ["counter", "files__read", "greet", "math__calc", "transform"])
        self.assertEqual(out["structured"], {"operation": "add", "result": 5.0})
        self.assertEqual(out["resources"], ["mcpd://counter/state"])
        self.assertEqual(out["state"], {"count": 2})

    def test_config_mode(self):
        # The SDK lists and calls config tools, lists resources and templates, and reads both.
        out = self.run_client("""
            import anyio, json, os
            from mcp import ClientSession, StdioServerParameters, stdio_client

            async def main():
                params = StdioServerParameters(command=os.environ["SERVER_PY"],
                                               args=[os.environ["MCPSTUDIO"], "serve", "--config", os.environ["CONFIG"]])
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        tools = await session.list_tools()
                        log = await session.call_tool("git_log", {"repo": os.environ["REPO"], "limit": 1})
                        resources = await session.list_resources()
                        templates = await session.list_resource_templates()
                        version = await session.read_resource("git://version")
                        print(json.dumps({
                            "tools": sorted(t.name for t in tools.tools),
                            "log": log.content[0].text, "log_error": log.is_error,
                            "resources": [str(r.uri) for r in resources.resources],
                            "templates": [t.uri_template for t in templates.resource_templates],
                            "version": version.contents[0].text,
                        }))
            anyio.run(main)
            """, CONFIG=os.path.join(HERE, "examples", "configs", "git.json"), REPO=HERE)
        self.assertEqual(out["tools"], ["git_log", "git_show", "git_status"])
        self.assertEqual(out["resources"], ["git://version"])
        self.assertEqual(out["templates"], ["git://branches/{repo}"])
        self.assertTrue(out["version"].startswith("git version"), out)
        if os.path.isdir(os.path.join(HERE, ".git")):
            self.assertFalse(out["log_error"], out["log"])
            self.assertEqual(len(out["log"].strip().splitlines()), 1)

    def test_client_auto_mode(self):
        # mcp.Client in its default auto mode discovers the server and speaks 2026-07-28.
        out = self.run_client("""
            import anyio, json, os, time
            import mcp
            from mcp import StdioServerParameters

            async def main():
                started = time.monotonic()
                params = StdioServerParameters(command=os.environ["SERVER_PY"],
                                               args=[os.environ["MCPSTUDIO"], "echo", "{message}"])
                async with mcp.Client(params) as client:
                    tools = await client.list_tools()
                    result = await client.call_tool("echo", {"message": "auto"})
                    version = client.protocol_version
                print(json.dumps({"tools": [t.name for t in tools.tools], "text": result.content[0].text,
                                  "seconds": time.monotonic() - started, "version": version}))
            anyio.run(main)
            """)
        self.assertEqual(out["tools"], ["echo"])
        self.assertEqual(out["text"], "auto\n")
        self.assertEqual(out["version"], "2026-07-28")  # it negotiated the modern era
        self.assertLess(out["seconds"], 5)


EVERYTHING = os.environ.get("MCPSTUDIO_EVERYTHING", "")  # npm @modelcontextprotocol/server-everything
TIME_SERVER = os.environ.get("MCPSTUDIO_TIME_SERVER", "")  # PyPI mcp-server-time


@unittest.skipUnless(_sdk_available(), "the official MCP Python SDK is not installed (set MCPSTUDIO_SDK_PYTHON)")
@unittest.skipUnless(EVERYTHING and os.path.exists(EVERYTHING) and TIME_SERVER and os.path.exists(TIME_SERVER),
                     "the real upstream servers are not installed (set MCPSTUDIO_EVERYTHING and MCPSTUDIO_TIME_SERVER)")
class RealUpstreamTests(ScratchDir):
    """The official SDK client, through mcpstudio, to two real MCP servers (Node and Python)."""

    run_client = PythonSdkInteropTests.run_client

    def test_sdk_through_the_aggregator(self):
        config = os.path.join(self.dir, "real.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {
                "everything": {"command": EVERYTHING, "args": ["stdio"]},
                "time": {"command": TIME_SERVER, "args": ["--local-timezone", "UTC"]}}}, f)
        code = """
            import anyio, json, os
            from mcp import ClientSession, StdioServerParameters, stdio_client

            async def main():
                params = StdioServerParameters(
                    command=os.environ["SERVER_PY"], args=[os.environ["MCPSTUDIO"], "serve", "--config", os.environ["CONFIG"]],
                    env=dict(os.environ))
                steps = []
                async def on_progress(progress, total, message):
                    steps.append(progress)
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write) as session:
                        init = await session.initialize()
                        tools = await session.list_tools()
                        echo = await session.call_tool("everything__echo", {"message": "through mcpstudio"})
                        total = await session.call_tool("everything__get-sum", {"a": 2, "b": 40})
                        now = await session.call_tool("time__get_current_time", {"timezone": "UTC"})
                        slow = await session.call_tool("everything__trigger-long-running-operation",
                                                       {"duration": 1, "steps": 4}, progress_callback=on_progress)
                        resources = await session.list_resources()
                        first = await session.read_resource(resources.resources[0].uri)
                        prompts = await session.list_prompts()
                        # completion/complete goes to the upstream that owns the prompt or template (issue 18)
                        from mcp.types import PromptReference, ResourceTemplateReference
                        department = await session.complete(
                            PromptReference(type="ref/prompt", name="everything__completable-prompt"),
                            {"name": "department", "value": "E"})
                        resource_id = await session.complete(
                            ResourceTemplateReference(type="ref/resource", uri="demo://resource/dynamic/text/{resourceId}"),
                            {"name": "resourceId", "value": "1"})
                        servers = await session.call_tool("mcpstudio__servers_list", {})
                        print(json.dumps({
                            "capabilities": sorted(k for k, v in init.capabilities.model_dump().items() if v is not None),
                            "tools": [t.name for t in tools.tools],
                            "echo": echo.content[0].text, "sum": total.content[0].text,
                            "now": json.loads(now.content[0].text), "slow": slow.is_error, "steps": steps,
                            "resource": str(first.contents[0].uri), "prompts": [p.name for p in prompts.prompts],
                            "servers": [(s["id"], s["status"]) for s in servers.structured_content["servers"]],
                            "completed": [department.completion.values, resource_id.completion.values],
                        }))
            anyio.run(main)
            """
        for run in ("cold", "cached"):  # the second run lists from the cache, starting nothing
            with self.subTest(run=run):
                out = self.run_client(code, CONFIG=config, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
                self.assertEqual(out["capabilities"], ["completions", "logging", "prompts", "resources", "tasks", "tools"])
                self.assertEqual(out["completed"], [["Engineering"], ["1"]])
                self.assertIn("everything__echo", out["tools"])
                self.assertIn("time__get_current_time", out["tools"])
                self.assertIn("mcpstudio__servers_list", out["tools"])
                for name in out["tools"]:
                    self.assertRegex(name, NAME_OK)
                self.assertIn("through mcpstudio", out["echo"])
                self.assertIn("42", out["sum"])
                self.assertEqual(out["now"]["timezone"], "UTC")
                self.assertFalse(out["slow"])
                self.assertGreaterEqual(len(out["steps"]), 2)
                self.assertTrue(out["resource"])
                self.assertTrue(all(p.startswith("everything__") for p in out["prompts"]) and out["prompts"])
                self.assertEqual(out["servers"], [["everything", "running"], ["time", "running"]])


    def test_client_features_pass_through(self):
        # Issue 18: the client's sampling, elicitation and roots reach server-everything through mcpstudio over
        # stdio: it lists all 17 tools (as to the client directly), and each round trip returns what the client
        # answered. A client that offers none of them is seen as offering none: the 13 tools it lists then.
        config = os.path.join(self.dir, "everything.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"everything": {"command": EVERYTHING, "args": ["stdio"]}}}, f)
        code = """
            import anyio, json, os, sys
            from mcp import ClientSession, StdioServerParameters, stdio_client, types

            async def sampling(context, params):
                return types.CreateMessageResult(role="assistant", model="test-model", stopReason="endTurn",
                                                 content=types.TextContent(type="text", text="sampled-by-the-client"))

            async def elicitation(context, params):
                return types.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True,
                                          "color": "blue", "email": "ada@example.com", "integer": 7, "number": 1.5})

            async def roots(context):
                return types.ListRootsResult(roots=[types.Root(uri="file:///srv/client-root", name="client-root")])

            async def main():
                params = StdioServerParameters(command=os.environ["SERVER_PY"], env=dict(os.environ),
                                               args=[os.environ["MCPSTUDIO"], "serve", "--config", os.environ["CONFIG"]])
                offer = sys.argv[1:] == ["offer"]
                callbacks = dict(sampling_callback=sampling, elicitation_callback=elicitation,
                                 list_roots_callback=roots) if offer else {}
                async with stdio_client(params) as (read, write):
                    async with ClientSession(read, write, **callbacks) as session:
                        await session.initialize()
                        names = [t.name for t in (await session.list_tools()).tools if t.name.startswith("everything__")]
                        out = {"tools": names}
                        if offer:
                            for name, arguments in (("trigger-sampling-request", {"prompt": "hi", "maxTokens": 5}),
                                                    ("trigger-elicitation-request", {}), ("get-roots-list", {})):
                                result = await session.call_tool("everything__" + name, arguments)
                                out[name] = [result.is_error, " ".join(c.text for c in result.content if c.type == "text")]
                        print(json.dumps(out))
            anyio.run(main)
            """
        cache = os.path.join(self.dir, "cache")
        for offer in ("offer", "offer", "none"):  # the second run lists from the cache; the third offers nothing
            with self.subTest(offer=offer):
                proc = subprocess.run([SDK_PYTHON, "-c", textwrap.dedent(code), offer], capture_output=True, text=True,
                                      timeout=90, env=dict(os.environ, MCPSTUDIO=MODULE, SERVER_PY=PY, CONFIG=config,
                                                           XDG_CACHE_HOME=cache))
                self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
                out = json.loads(proc.stdout.strip().splitlines()[-1])
                features = {"everything__trigger-sampling-request", "everything__trigger-elicitation-request",
                            "everything__get-roots-list"}
                if offer == "none":
                    self.assertEqual(len(out["tools"]), 13, out["tools"])
                    self.assertFalse(features & set(out["tools"]), out["tools"])
                    continue
                self.assertEqual(len(out["tools"]), 17, out["tools"])
                self.assertLessEqual(features, set(out["tools"]))
                self.assertEqual(out["trigger-sampling-request"][0], False)
                self.assertIn("sampled-by-the-client", out["trigger-sampling-request"][1])
                self.assertIn("test-model", out["trigger-sampling-request"][1])
                self.assertEqual(out["trigger-elicitation-request"][0], False)
                self.assertIn("Ada Lovelace", out["trigger-elicitation-request"][1])
                self.assertIn("file:///srv/client-root", out["get-roots-list"][1])


@unittest.skipUnless(INSPECTOR and os.path.exists(INSPECTOR), "the MCP Inspector CLI is not installed (set MCPSTUDIO_INSPECTOR)")
class InspectorInteropTests(unittest.TestCase):
    def inspector(self, *args):
        proc = subprocess.run([INSPECTOR, "--cli", PY, MODULE, "echo", "{message}"] + list(args),
                              capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        self.assertEqual(proc.returncode, 0, "inspector failed:\n%s\n%s" % (proc.stdout, proc.stderr[-3000:]))
        return json.loads(proc.stdout)

    def test_list_and_call(self):
        # The Inspector CLI sees the echo tool and calls it.
        tools = self.inspector("--method", "tools/list")
        self.assertEqual([t["name"] for t in tools["tools"]], ["echo"])
        result = self.inspector("--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=inspected")
        self.assertEqual(result["content"][0]["text"], "inspected\n")


# --------------------------------------------------------------------------
# Streamable HTTP (--http): both eras, sessions, safety, many clients
# --------------------------------------------------------------------------

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}


class EditedJsonTextTests(unittest.TestCase):
    """edited_json_text: config edits that keep a JSONC file's comments and layout."""

    CASES = [
        # (what it proves, original text, function of the parsed data giving the new data)
        ("a new top-level key lands before the closing brace",
         '{\n  // keep me\n  "a": 1\n}\n', lambda d: dict(d, b=[1, 2])),
        ("a server added to an existing mcpServers",
         '{\n  "mcpServers": {\n    // keep me\n    "x": {"command": "x"}\n  }\n}\n',
         lambda d: {"mcpServers": dict(d["mcpServers"], y={"command": "y", "args": []})}),
        ("the first of three servers removed",
         '{"mcpServers": {\n  "a": {"command": "a"},\n  // keep me\n  "b": {"command": "b"},\n  "c": {"command": "c"}\n}}',
         lambda d: {"mcpServers": {"b": {"command": "b"}, "c": {"command": "c"}}}),
        ("the first two of three removed at once",
         '{"mcpServers": {"a": 1, "b": 2, /* keep me */ "c": 3}}', lambda d: {"mcpServers": {"c": 3}}),
        ("the middle and the last removed",
         '{\n  // keep me\n  "m": {"a": 1, "b": 2, "c": 3}\n}', lambda d: {"m": {"a": 1}}),
        ("every member removed",
         '{ // keep me\n  "m": {"a": 1, "b": 2}\n}', lambda d: {"m": {}}),
        ("a value replaced, its neighbours untouched",
         '{\n  "defaultNamespace": "a", // keep me\n  "n": 1\n}', lambda d: dict(d, defaultNamespace="b")),
        ("a key added to an empty object with a comment",
         '{\n  "mcpServers": { /* keep me */ }\n}', lambda d: {"mcpServers": {"t": {"command": "t"}}}),
        ("trailing commas stay readable",
         '{\n  "a": {"x": 1,},\n  // keep me\n  "b": 2,\n}', lambda d: dict(d, c=3, a={"x": 1, "y": 2})),
        ("a member added after a last member with a comment on its line",
         '{\n  "mcpServers": {\n    "x": {"command": "x"} // keep me\n  }\n}', lambda d: {"mcpServers": dict(
             d["mcpServers"], y={"command": "y"})}),
        ("a namespace list replaced inside a nested object",
         '{"namespaces": {"dev": {"servers": ["a"], // keep me\n "description": "d"}}}',
         lambda d: {"namespaces": {"dev": {"servers": ["a", "b"], "description": "d"}}}),
    ]

    def test_edits_keep_comments(self):
        for what, text, change in self.CASES:
            with self.subTest(what):
                old = json.loads(mcpstudio.strip_json_comments(text))
                new = change(json.loads(json.dumps(old)))
                result = mcpstudio.edited_json_text(text, new, "test.json")
                self.assertEqual(json.loads(mcpstudio.strip_json_comments(result)), new, result)
                self.assertIn("keep me", result)

    def test_an_empty_file_becomes_plain_json(self):
        # A missing or empty file is written as indented JSON.
        self.assertEqual(mcpstudio.edited_json_text("", {"a": 1}, "x.json"), '{\n  "a": 1\n}\n')


class StdioClientTests(unittest.TestCase):
    """The CLI's small client (`inspect`, `call`): every wait ends, with the reason."""

    def test_a_server_that_never_answers(self):
        started = time.monotonic()
        with mcpstudio.StdioClient([PY, "-c", "import sys; sys.stdin.read()"], timeout=0.6) as client:
            with self.assertRaises(mcpstudio.McpError) as raised:
                client.request("ping")
        self.assertIn("ping: no answer within 0.6 s from", str(raised.exception))
        self.assertLess(time.monotonic() - started, 10)

    def test_a_server_that_exits_while_waited_for_without_a_limit(self):
        # wait=False (a `call` waits as long as its server lives) still ends when the server does.
        with mcpstudio.StdioClient([PY, "-c", "import sys, time; time.sleep(0.5); sys.exit(3)"]) as client:
            with self.assertRaises(mcpstudio.McpError) as raised:
                client.request("tools/call", {"name": "x"}, wait=False)
        self.assertIn("the server exited (code 3) before answering", str(raised.exception))

    def test_ctrl_c_ends_a_wait_without_a_limit(self):
        # `call` waits for as long as its server lives; Ctrl+C must end that wait at once. (Windows
        # before 3.14 cannot interrupt one long lock wait, so the client waits in slices; here a
        # simulated Ctrl+C, which does not wake a blocked wait either, shows the slices at work.)
        import _thread
        child = ("import os, sys, threading, time; threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)),"
                 " daemon=True).start(); time.sleep(4)")  # never answers; exits on EOF, or after 4 s
        # interrupt_main raises KeyboardInterrupt only under Python's own SIGINT handler, which a
        # shell's `python3 -m unittest &` does not install: install it for this test.
        self.addCleanup(signal.signal, signal.SIGINT, signal.signal(signal.SIGINT, signal.default_int_handler))
        with mcpstudio.StdioClient([PY, "-c", child]) as client:
            timer = threading.Timer(0.3, _thread.interrupt_main)
            try:
                with self.assertRaises(KeyboardInterrupt):
                    started = time.monotonic()
                    timer.start()
                    client.request("tools/call", {"name": "x"}, wait=False)
                waited = time.monotonic() - started
            finally:
                timer.cancel()
        self.assertLess(waited, 2.0)

    def test_a_value_no_process_can_receive(self):
        with self.assertRaises(mcpstudio.UsageError) as raised:
            mcpstudio.StdioClient([PY, "a\0b"])
        self.assertIn("word 1 of the command line holds a NUL character", str(raised.exception))


ENTRY_ARGS = (["-P"] if sys.version_info >= (3, 11) else []) + ["-m", "mcpstudio"]  # what install writes before MODE ARGS


class ToolingCase(ScratchDir):
    """A scratch HOME (so client and mcpstudio configs land in it) and a way to run mcpstudio's commands."""

    def setUp(self):
        super().setUp()
        self.home = os.path.join(self.dir, "home")
        os.mkdir(self.home)
        self.env = dict(os.environ, HOME=self.home, XDG_CONFIG_HOME=os.path.join(self.home, ".config"))
        for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "APPDATA", "MCPSTUDIO_HTTP_TOKEN"):
            self.env.pop(key, None)
        self.config = os.path.join(self.home, ".config", "mcpstudio", "config.json")

    def cli(self, *args, code=0, cwd=None):
        proc = subprocess.run(SERVER + list(args), capture_output=True, text=True, timeout=WAIT * 2,
                              stdin=subprocess.DEVNULL, env=self.env, cwd=cwd or self.dir)
        self.assertEqual(proc.returncode, code, "args %s\nstdout: %s\nstderr: %s" % (args, proc.stdout, proc.stderr))
        return proc

    def greeter(self, folder) -> str:
        """A script folder with one self-describing script, `hi`."""
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "hi")
        with open(path, "w") as f:
            f.write("#!%s\nimport sys\nif sys.argv[1:] == ['--help']:\n    print('{\"description\": \"Say hi.\"}')\n"
                    "    sys.exit(0)\nprint('hi from script')\n" % PY)
        os.chmod(path, 0o755)
        return folder

    def write_json(self, path, data, text=None):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text if text is not None else json.dumps(data))
        return path

    def read_json(self, path):
        with open(path) as f:
            return json.load(f)


class ToolingTests(ToolingCase):
    """The commands for people (issue 12), each run as a subprocess on temporary files."""

    # --- inspect ---------------------------------------------------------

    def test_inspect_template_table_and_json(self):
        # inspect shows a template's tool with its parameters as a table, and the same listing as JSON.
        proc = self.cli("inspect", "--read-only", "git", "log", "[--oneline]", "-n", "{limit # how many}")
        self.assertIn("tools (1):", proc.stdout)
        self.assertIn("  git  [read-only]", proc.stdout)
        self.assertRegex(proc.stdout, r"oneline\s+boolean\s+default false")
        self.assertRegex(proc.stdout, r"limit\s+string\s+required\s+how many")
        listing = json.loads(self.cli("inspect", "--json", "echo", "{message}").stdout)
        self.assertEqual([t["name"] for t in listing["tools"]], ["echo"])
        self.assertEqual(listing["tools"][0]["inputSchema"]["required"], ["message"])
        self.assertEqual(listing["protocolVersion"], mcpstudio.LATEST_PROTOCOL_VERSION)
        self.assertEqual(listing["prompts"], [])

    def test_inspect_script_folder_config_and_upstream(self):
        # inspect works on --root-directory, serve --config (tools and resources) and a server after --.
        scripts = self.greeter(os.path.join(self.dir, "scripts"))
        self.assertRegex(self.cli("inspect", "--root-directory", scripts).stdout, r"tools \(1\):\n  hi\n      Say hi.")
        config = self.write_json(os.path.join(self.dir, "c.json"), {
            "tools": [{"name": "say", "command": "echo {text}"}],
            "resources": [{"uri": "demo://version", "name": "v", "command": "echo 1"}]})
        proc = self.cli("inspect", "serve", "--config", config)
        self.assertIn("  say", proc.stdout)
        self.assertIn("demo://version", proc.stdout)
        proc = self.cli("inspect", "--json", "--", PY, MODULE, "--name", "up", "echo", "{x}")
        self.assertEqual([t["name"] for t in json.loads(proc.stdout)["tools"]], ["up"])

    def test_inspect_of_a_server_that_fails(self):
        # A mode that cannot start shows its own error and inspect exits non-zero, leaving nothing running.
        proc = self.cli("inspect", "echo", "{x}", "{x...}", code=1)
        self.assertIn("bad template", proc.stderr)
        self.assertIn("exited (code 2) before answering", proc.stderr)
        proc = self.cli("inspect", "--", os.path.join(self.dir, "no-such-server"), code=2)
        self.assertIn("cannot start", proc.stderr)

    # --- call ------------------------------------------------------------

    def test_call_prints_text_and_exits_by_is_error(self):
        # call runs one tool: its text on stdout and exit 0; an isError result on stderr and exit 1.
        proc = self.cli("call", "echo", "message=hello world", "echo", "{message}")
        self.assertEqual(proc.stdout, "hello world\n")
        proc = self.cli("call", "false", "false", code=1)
        self.assertIn("`false` exited with code 1.", proc.stderr)
        self.assertEqual(proc.stdout, "")

    def test_call_shows_the_validation_errors_a_client_gets(self):
        # Wrong or unknown arguments give the server's own isError text; an unknown tool its error.
        proc = self.cli("call", "echo", "nope=1", "echo", "{message}", code=1)
        self.assertIn("`message` is required; `nope` is not a known argument", proc.stderr)
        proc = self.cli("call", "missing", "echo", "{message}", code=1)
        self.assertIn("Unknown tool: missing", proc.stderr)

    def test_call_types_arguments_by_the_schema(self):
        # key=value is JSON for non-string parameters, text for strings; arrays repeat; --json merges.
        config = self.write_json(os.path.join(self.dir, "c.json"), {"tools": [{
            "name": "show", "command_template": "echo {n} {flag} {word} {items}",
            "parameters": {"n": {"type": "integer"}, "flag": {"type": "boolean"}, "word": {"type": "string"},
                           "items": {"type": "array"}}}]})
        proc = self.cli("call", "show", "n=3", "flag=true", "word=007", "items=a", "items=b c",
                        "serve", "--config", config)
        self.assertEqual(proc.stdout, "3 true 007 a b c\n")
        proc = self.cli("call", "show", "--json", '{"n": 4, "flag": false, "items": ["x"]}', "word=w",
                        "serve", "--config", config)
        self.assertEqual(proc.stdout, "4 false w x\n")
        proc = self.cli("call", "show", "n=three", "flag=true", "word=w", "items=x", "serve", "--config", config,
                        code=1)
        self.assertIn("n", proc.stderr)
        raw = json.loads(self.cli("call", "show", "--raw", "--json",
                                  '{"n": 1, "flag": true, "word": "w", "items": []}', "serve", "--config",
                                  config).stdout)
        self.assertFalse(raw["isError"])

    def test_call_against_an_upstream_command(self):
        # After --, call is a small MCP client of any server: here mcpstudio itself started by hand.
        proc = self.cli("call", "up", "x=via upstream", "--", PY, MODULE, "--name", "up", "echo", "{x}")
        self.assertEqual(proc.stdout, "via upstream\n")

    def test_call_prints_structured_content_and_server_logs(self):
        # Against a server whose result carries structuredContent that says more than its text, call
        # prints both; the server's log messages go to stderr.
        fake = self.script("fake_mcp.py", FAKE_SERVER, executable=False)
        proc = self.cli("call", "echo", "text=hi", "--", PY, fake, "--name", "fk")
        self.assertEqual(proc.stdout, 'fk: hi\n{\n  "echoed": "hi"\n}\n')
        self.assertIn("[info] echoing hi", proc.stderr)
        raw = json.loads(self.cli("call", "echo", "text=hi", "--raw", "--", PY, fake, "--name", "fk").stdout)
        self.assertEqual(raw["structuredContent"], {"echoed": "hi"})

    # --- help and the terminal hint ---------------------------------------

    def test_every_subcommand_has_its_own_help(self):
        # `CMD --help` prints that command's usage (init --help used to be an error).
        for command in mcpstudio.SUBCOMMANDS:
            with self.subTest(command=command):
                proc = self.cli(command, "--help")
                self.assertTrue(proc.stdout.startswith("usage: mcpstudio %s" % command), proc.stdout)
        self.assertIn("inspect|call|install", self.cli("--help").stdout)
        # -h among a subcommand's later words prints its help too, and changes nothing
        for words in (("namespace", "add", "-h"), ("init", "x", "--help"), ("install", "--write", "-h")):
            with self.subTest(words=words):
                proc = self.cli(*words)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertTrue(proc.stdout.startswith("usage: mcpstudio %s" % words[0]), proc.stdout)

    @unittest.skipUnless(hasattr(os, "openpty"), "needs a pseudo-terminal")
    def test_stdio_mode_in_a_terminal_says_what_it_waits_for(self):
        # With a terminal on stdin, stdio mode says on stderr that it waits for a client and how to try
        # the tool; with a pipe (a real client) it says nothing.
        leader, follower = os.openpty()
        self.addCleanup(os.close, leader)
        proc = subprocess.Popen(SERVER + ["echo", "{message}"], stdin=follower, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env)
        os.close(follower)
        try:
            import select
            said, deadline = b"", time.monotonic() + WAIT
            while b"Ctrl+D" not in said and time.monotonic() < deadline:
                if select.select([proc.stderr], [], [], 0.1)[0]:
                    chunk = os.read(proc.stderr.fileno(), 4096)
                    if not chunk:
                        break
                    said += chunk
            self.assertIn("waiting for an MCP client", said.decode())
            self.assertIn("inspect echo '{message}'", said.decode())
        finally:
            proc.terminate()
            proc.wait(WAIT)
            proc.stdout.close()
            proc.stderr.close()
        with McpProcess("echo", "{message}") as server:
            server.initialize()
            self.assertEqual(server.close(), 0)
            self.assertNotIn("waiting", "".join(server.stderr))

    # --- install ---------------------------------------------------------

    def test_install_prints_each_clients_entry(self):
        # Each client gets its own shape: absolute interpreter and module, paths made absolute.
        self.greeter(os.path.join(self.dir, "scripts"))  # install checks the mode: the folder and config exist
        self.write_json(os.path.join(self.dir, "t.json"), {"tools": [{"name": "t", "command": "echo t"}]})
        # The module runs from cached bytecode (python3 -m mcpstudio, its folder on PYTHONPATH). Claude Desktop
        # on macOS starts servers with launchd's PATH: the entry carries this shell's.
        env = {"PYTHONPATH": HERE}
        desktop = dict(env, PATH=self.env["PATH"]) if os.name == "posix" else env
        expect = {"claude-code": ("mcpServers", {"type": "stdio", "env": env}),
                  "claude-desktop": ("mcpServers", {"env": desktop}),
                  "cursor": ("mcpServers", {"env": env}), "vscode": ("servers", {"type": "stdio", "env": env})}
        for client, (key, extra) in expect.items():
            with self.subTest(client=client):
                proc = self.cli("install", "--client", client, "--root-directory", "scripts")
                entry = json.loads(proc.stdout)[key]["scripts"]
                self.assertEqual(entry, dict(extra, command=os.path.abspath(PY), args=ENTRY_ARGS + [
                    "--root-directory", os.path.join(self.dir, "scripts")]))
                self.assertIn(mcpstudio.client_config_path(client).replace(os.path.expanduser("~"), self.home),
                              proc.stderr)
        proc = self.cli("install", "--client", "codex", "--as", "my tool", "--config=t.json", "serve")
        self.assertEqual(proc.stdout, '[mcp_servers."my tool"]\ncommand = %s\nargs = [%s, "--config=%s", "serve"]\n'
                         'env = { PYTHONPATH = %s }\n'
                         % (json.dumps(os.path.abspath(PY)), ", ".join(map(json.dumps, ENTRY_ARGS)),
                            os.path.join(self.dir, "t.json"), json.dumps(HERE)))
        # HTTP mode: the URL (and the token as a header); Claude Desktop cannot take one.
        proc = self.cli("install", "--client", "claude-code", "--http", "0.0.0.0:8123", "--http-token", "s3",
                        "echo", "{x}")
        self.assertEqual(json.loads(proc.stdout)["mcpServers"]["echo"], {
            "type": "http", "url": "http://127.0.0.1:8123/mcp", "headers": {"Authorization": "Bearer s3"}})
        self.assertIn("start it with", proc.stderr)
        proc = self.cli("install", "--client", "claude-desktop", "--http", "8123", "echo", code=2)
        self.assertIn("stdio servers only", proc.stderr)
        self.cli("install", "--client", "emacs", "echo", code=2)

    def test_client_config_paths_per_platform(self):
        # The user-level file of each client on Linux, macOS and Windows.
        home, support = os.path.expanduser("~"), os.path.expanduser("~/Library/Application Support")  # (as a Windows host joins it)
        table = {
            ("claude-desktop", "darwin"): os.path.join(support, "Claude", "claude_desktop_config.json"),
            ("vscode", "darwin"): os.path.join(support, "Code", "User", "mcp.json"),
            ("cursor", "win32"): os.path.join(home, ".cursor", "mcp.json"),
            ("claude-code", "win32"): os.path.join(home, ".claude.json"),
            ("codex", "linux"): os.path.join(home, ".codex", "config.toml"),
        }
        for (client, platform), path in table.items():
            with self.subTest(client=client, platform=platform):
                self.assertEqual(mcpstudio.client_config_path(client, platform), path)
        saved = dict(os.environ)
        self.addCleanup(lambda: (os.environ.clear(), os.environ.update(saved)))
        os.environ["APPDATA"] = r"C:\Users\me\AppData\Roaming"
        os.environ["XDG_CONFIG_HOME"] = "/x/config"
        self.assertEqual(mcpstudio.client_config_path("claude-desktop", "win32"),
                         os.path.join(r"C:\Users\me\AppData\Roaming", "Claude", "claude_desktop_config.json"))
        self.assertEqual(mcpstudio.client_config_path("vscode", "win32"),
                         os.path.join(r"C:\Users\me\AppData\Roaming", "Code", "User", "mcp.json"))
        self.assertEqual(mcpstudio.client_config_path("vscode", "linux"), "/x/config/Code/User/mcp.json")
        self.assertEqual(mcpstudio.client_config_path("claude-desktop", "linux"),
                         "/x/config/Claude/claude_desktop_config.json")

    def test_install_write_merges_keeps_others_and_backs_up(self):
        # --write adds the entry next to the file's other servers and keys, keeps a .bak and the mode.
        path = self.write_json(os.path.join(self.home, ".claude.json"), {
            "numStartups": 7, "mcpServers": {"other": {"command": "x"}}, "projects": {"/p": {"mcpServers": {}}}})
        os.chmod(path, 0o640)
        self.cli("install", "--client", "claude-code", "--write", "echo", "{message}")
        data = self.read_json(path)
        self.assertEqual(data["numStartups"], 7)
        self.assertEqual(data["projects"], {"/p": {"mcpServers": {}}})
        self.assertEqual(sorted(data["mcpServers"]), ["echo", "other"])
        self.assertEqual(self.read_json(path + ".bak")["mcpServers"], {"other": {"command": "x"}})
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o640)
        self.assertEqual(sorted(f for f in os.listdir(self.home) if f.startswith(".claude")),
                         [".claude.json", ".claude.json.bak"])  # no temporary file left behind
        # A new file is created 0600; Codex's TOML keeps its other tables and replaces its own.
        toml = os.path.join(self.home, ".codex", "config.toml")
        self.cli("install", "--client", "cursor", "--write", "echo", "{message}")
        self.assertEqual(os.stat(os.path.join(self.home, ".cursor", "mcp.json")).st_mode & 0o777, 0o600)
        self.write_json(toml, None, 'model = "o3"\n\n[mcp_servers.echo]\ncommand = "old"\n\n'
                                    '[mcp_servers.echo.env]\nA = "1"\n\n[mcp_servers.keep]\ncommand = "k"\n')
        self.assertIn("replaced echo", self.cli("install", "--client", "codex", "--write", "echo", "{m}").stdout)
        with open(toml) as f:
            text = f.read()
        self.assertTrue(text.startswith('model = "o3"\n\n[mcp_servers.echo]\ncommand = %s\n' % json.dumps(
            os.path.abspath(PY))), text)
        self.assertNotIn("old", text)
        self.assertNotIn("[mcp_servers.echo.env]", text)
        self.assertIn('[mcp_servers.keep]\ncommand = "k"\n', text)
        if sys.version_info >= (3, 11):
            import tomllib
            self.assertEqual(tomllib.loads(text)["mcp_servers"]["echo"]["args"], ENTRY_ARGS + ["echo", "{m}"])

    def test_installed_entry_runs_from_another_folder(self):
        # The printed entry, started as a client would (in its own folder), serves the tool; the
        # script folder was given relative to where install ran.
        self.greeter(os.path.join(self.dir, "scripts"))
        for words, tool, arguments, expected in ((["--root-directory", "scripts"], "hi", {}, "hi from script\n"),
                                                 (["echo", "{message}"], "echo", {"message": "m"}, "m\n")):
            entry = json.loads(self.cli("install", "--client", "claude-desktop", *words).stdout)["mcpServers"]
            entry = list(entry.values())[0]
            with McpProcess(cmd=[entry["command"]] + entry["args"], cwd=self.home, env=dict(self.env, **entry["env"])) as server:
                server.initialize()
                self.assertEqual(text_of(server.call(tool, arguments)), expected, server.context())
                self.assertEqual(server.close(), 0)

    # --- import ----------------------------------------------------------

    def test_import_from_every_client(self):
        # Real-shaped configs of Claude Desktop, Claude Code, Cursor and VS Code: servers come over
        # with env, cwd, disabled and ${VAR}; VS Code-only values and envFile are skipped with a reason.
        files = {
            "claude-desktop": (os.path.join(self.home, ".config", "Claude", "claude_desktop_config.json"), {
                "globalShortcut": "", "mcpServers": {"fs": {"command": "npx", "args": [
                    "-y", "@modelcontextprotocol/server-filesystem", "${HOME}/notes"], "env": {"TOKEN": "${TOKEN}"}}}}),
            "claude-code": (os.path.join(self.home, ".claude.json"), {
                "numStartups": 3, "mcpServers": {"time": {"type": "stdio", "command": "uvx",
                                                          "args": ["mcp-server-time"], "env": {}}},
                "projects": {self.dir: {"mcpServers": {"local": {"type": "stdio", "command": "./srv",
                                                                 "args": [], "cwd": "/srv"}}},
                             "/elsewhere": {"mcpServers": {"far": {"command": "no"}}}}}),
            "cursor": (os.path.join(self.home, ".cursor", "mcp.json"), {"mcpServers": {
                "web": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${API_KEY}"}},
                "off": {"command": "x", "disabled": True, "autoApprove": ["t"]}}}),
        }
        for _client, (path, data) in files.items():
            self.write_json(path, data)
        self.write_json(os.path.join(self.dir, ".mcp.json"), {"mcpServers": {"shared": {"command": "team-srv"}}})
        vscode = os.path.join(self.home, ".config", "Code", "User", "mcp.json")
        self.write_json(vscode, None, """{
          // VS Code's mcp.json: comments and trailing commas are allowed
          "inputs": [{"type": "promptString", "id": "key", "password": true}],
          "servers": {
            "gh": {"type": "stdio", "command": "gh-mcp", "env": {"TOKEN": "${input:key}"}},
            "repo": {"command": "npx", "args": ["srv", "${workspaceFolder}"]},
            "dotenv": {"command": "node", "args": ["x.js"], "envFile": "${userHome}/.env"},
            "ok": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"], "env": {"HOME_DIR": "${env:HOME}"}},
          },
        }""")
        expected = {"claude-desktop": ["fs"], "claude-code": ["time", "local", "shared"], "cursor": ["web", "off"],
                    "vscode": ["ok"]}
        for client, names in expected.items():
            with self.subTest(client=client):
                before = os.path.exists(self.config) and self.read_json(self.config)
                proc = self.cli("import", "--from", client)
                self.assertIn("dry run: nothing written", proc.stdout)
                self.assertEqual(os.path.exists(self.config) and self.read_json(self.config), before)
                for name in names:
                    self.assertIn("import  %s:" % name, proc.stdout)
                self.cli("import", "--from", client, "--write")
        self.assertNotIn("far", proc.stdout)
        proc = self.cli("import", vscode)
        self.assertIn("skip    gh: it uses VS Code's ${input:key}", proc.stdout)
        self.assertIn("skip    repo: it uses VS Code's ${workspaceFolder}", proc.stdout)
        self.assertIn("skip    dotenv: it reads variables from envFile", proc.stdout)
        self.assertIn("skip    ok: %s already has a server ok" % self.config, proc.stdout)
        servers = self.read_json(self.config)["mcpServers"]
        self.assertEqual(list(servers), ["fs", "time", "local", "shared", "web", "off", "ok"])
        self.assertEqual(servers["fs"]["env"], {"TOKEN": "${TOKEN}"})
        self.assertEqual(servers["fs"]["args"][-1], "${HOME}/notes")
        self.assertEqual(servers["local"]["cwd"], "/srv")
        self.assertEqual(servers["off"], {"command": "x", "disabled": True})
        self.assertEqual(servers["ok"]["env"], {"HOME_DIR": "${HOME}"})
        self.assertEqual(servers["web"]["headers"], {"Authorization": "Bearer ${API_KEY}"})
        self.assertEqual(os.stat(self.config).st_mode & 0o777, 0o600)
        # mcpstudio reads what it wrote: status lists every imported server.
        env = dict(self.env, TOKEN="t", API_KEY="k")
        status = subprocess.run(SERVER + ["status"], capture_output=True, text=True, env=env, timeout=WAIT,
                                stdin=subprocess.DEVNULL)
        self.assertEqual(status.returncode, 0, status.stderr)
        for name in servers:
            self.assertRegex(status.stdout, r"(?m)^%s\s" % name)

    # --- add, remove, list, namespace -------------------------------------

    def test_add_list_namespace_remove(self):
        # The config's servers are edited in place: written atomically with mode 0600, namespaces kept
        # consistent, and a server that is not there is a clear error.
        self.cli("add", "time", "--env", "TZ=UTC", "--", "uvx", "mcp-server-time", "--local-timezone", "UTC")
        self.assertEqual(os.stat(self.config).st_mode & 0o777, 0o600)
        self.cli("add", "web", "--url", "https://example.com/mcp", "--header", "Authorization=Bearer ${K}")
        self.cli("namespace", "add", "dev", "time")
        self.cli("namespace", "assign", "dev", "web")
        self.cli("namespace", "default", "dev")
        data = self.read_json(self.config)
        self.assertEqual(data["mcpServers"]["time"], {"command": "uvx", "args": [
            "mcp-server-time", "--local-timezone", "UTC"], "env": {"TZ": "UTC"}})
        self.assertEqual(data["mcpServers"]["web"]["headers"], {"Authorization": "Bearer ${K}"})
        self.assertEqual(data["namespaces"], {"dev": {"servers": ["time", "web"]}})
        self.assertEqual(data["defaultNamespace"], "dev")
        proc = self.cli("list")
        self.assertRegex(proc.stdout, r"time\s+uvx mcp-server-time --local-timezone UTC\s+\[dev\]")
        self.assertIn("default namespace dev", proc.stdout)
        self.assertIn("no server nope", self.cli("namespace", "assign", "dev", "nope", code=1).stderr)
        self.assertIn("no server nope", self.cli("remove", "nope", code=1).stderr)
        self.cli("remove", "time")
        listed = json.loads(self.cli("list", "--json").stdout)
        self.assertEqual([(s["name"], s["namespaces"]) for s in listed["servers"]], [("web", ["dev"])])
        self.cli("disable", "web")  # issue 24: the TUI's e, p go through these
        self.assertEqual(self.read_json(self.config)["mcpServers"]["web"]["disabled"], True)
        self.cli("enable", "web")
        self.assertNotIn("disabled", self.read_json(self.config)["mcpServers"]["web"])
        self.assertIn("no server nope", self.cli("enable", "nope", code=1).stderr)
        self.cli("namespace", "deny", "dev", "web", "search")
        self.cli("namespace", "allow", "dev", "web", "search")  # replaces the entry, not a second one
        self.assertEqual(self.read_json(self.config)["toolPermissions"],
                         [{"namespace": "dev", "server": "web", "toolName": "search", "enabled": True}])
        self.assertIn("no server nope", self.cli("namespace", "deny", "dev", "nope", "x", code=1).stderr)
        self.assertIn("NS SERVER TOOL", self.cli("namespace", "deny", "dev", "web", code=2).stderr)
        self.cli("namespace", "remove", "dev")
        data = self.read_json(self.config)
        self.assertNotIn("namespaces", data)
        self.assertNotIn("defaultNamespace", data)
        self.assertNotIn("toolPermissions", data)
        self.assertIn("after --", self.cli("add", "x", "uvx", code=2).stderr)

    def test_editing_a_commented_config_keeps_its_comments(self):
        # A JSONC file (init writes one) keeps its comments and layout through add, namespace and
        # remove, and install --write keeps those of VS Code's mcp.json; no warning is needed.
        config = os.path.join(self.dir, "tools.json")
        self.cli("init", "tools", "--command", "echo", "-o", config)
        with open(config) as f:
            before = f.read()
        for args in (["add", "time", "--config", config, "--", "uvx", "mcp-server-time"],
                     ["namespace", "add", "dev", "time", "--config", config],
                     ["remove", "time", "--config", config]):
            self.assertEqual(self.cli(*args).stderr, "")
        with open(config) as f:
            after = f.read()
        comments = [line for line in before.splitlines() if "//" in line]
        self.assertGreater(len(comments), 5)
        self.assertEqual([line for line in after.splitlines() if "//" in line], comments)
        self.assertTrue(after.startswith(before.rsplit("\n}", 1)[0]), after)  # only the end changed
        self.cli("check", "--config", config)
        vscode = self.write_json(os.path.join(self.home, ".config", "Code", "User", "mcp.json"), None,
                                 '{\n  // my servers\n  "servers": {\n    "old": {"command": "x"}, // keep\n  }\n}\n')
        self.assertEqual(self.cli("install", "--client", "vscode", "--write", "echo", "{m}").stderr.count("warning"), 0)
        with open(vscode) as f:
            text = f.read()
        self.assertIn("// my servers", text)
        self.assertIn('"old": {"command": "x"}, // keep', text)
        self.assertEqual(json.loads(mcpstudio.strip_json_comments(text))["servers"]["echo"]["args"], ENTRY_ARGS + ["echo", "{m}"])

    # --- rough edges -------------------------------------------------------

    def test_ok_exit_codes_from_the_command_line_and_the_config(self):
        # grep's exit 1 ("no match") is a success when listed; inspect shows the accepted codes; any
        # other code still fails; a bad list stops startup.
        haystack = os.path.join(self.dir, "haystack.txt")
        with open(haystack, "w") as f:
            f.write("needle\n")
        proc = self.cli("call", "grep", "pattern=absent", "--ok-exit", "0,1", "grep", "{pattern}", haystack)
        self.assertEqual(proc.stdout, "(no output, exit code 1)\n")
        self.cli("call", "grep", "pattern=absent", "grep", "{pattern}", haystack, code=1)
        proc = self.cli("call", "grep", "pattern=x", "--ok-exit", "0,1", "grep", "{pattern}", "/no/such", code=1)
        self.assertIn("exited with code 2", proc.stderr)
        self.assertIn("exit codes accepted: 0,1", self.cli("inspect", "--ok-exit", "0,1", "grep", "{p}").stdout)
        self.assertIn("--ok-exit needs exit codes", self.cli("inspect", "--ok-exit", "one", "grep", code=1).stderr)
        config = self.write_json(os.path.join(self.dir, "c.json"), {"tools": [
            {"name": "find", "command": "grep {pattern} %s" % haystack, "ok_exit_codes": [0, 1]}]})
        self.assertEqual(self.cli("call", "find", "pattern=absent", "serve", "--config", config).stdout,
                         "(no output, exit code 1)\n")
        listing = json.loads(self.cli("inspect", "--json", "serve", "--config", config).stdout)
        self.assertEqual(listing["tools"][0]["_meta"], {mcpstudio.OK_EXIT_META: [0, 1]})
        self.write_json(config, {"tools": [{"name": "find", "command": "grep {p}", "ok_exit_codes": "1"}]})
        self.assertIn("ok_exit_codes", self.cli("check", "--config", config, code=1).stderr)

    def test_template_mode_feeds_stdin(self):
        # --stdin is a text template fed to the command; its fields join the tool's parameters.
        script = "import sys; print(sys.stdin.read().upper() + ' ' + sys.argv[1])"
        proc = self.cli("call", "t", "text=piped in", "label=L", "--name", "t", "--stdin", "{text}", PY, "-c",
                        script, "{label}")
        self.assertEqual(proc.stdout, "PIPED IN L\n")
        tool = json.loads(self.cli("inspect", "--json", "--stdin", "{text}", "cat").stdout)["tools"][0]
        self.assertEqual(tool["inputSchema"]["required"], ["text"])
        self.assertIn("with `{text}` on stdin", tool["description"])

    def test_progress_names_the_tool_not_the_interpreter(self):
        # A config tool run through `bash -c` reports progress as the tool, not as `bash`.
        config = self.write_json(os.path.join(self.dir, "c.json"), {"tools": [
            {"name": "slow_build", "command": "sh -c 'sleep 1.3'"}]})
        with McpProcess("serve", "--config", config, env=self.env) as server:
            server.initialize()
            server.call("slow_build", {}, meta={"progressToken": "p"})
            messages = [n["params"].get("message", "") for n in server.notifications_of("notifications/progress")]
            self.assertTrue(messages, server.context())
            self.assertTrue(all("`slow_build`" in m and "`sh`" not in m for m in messages), messages)

    def test_status_check_stays_in_the_namespace_and_masks_secrets_not_paths(self):
        # status --check checks the active namespace only (others are "skipped", not "failed"), says
        # so on stderr correctly, and shows ${HOME} expanded while a ${..._TOKEN} value is masked.
        config = self.write_json(os.path.join(self.dir, "ns.json"), {
            "mcpServers": {"a": {"command": PY, "args": SERVER[1:] + ["--name", "a", "echo", "${HOME}/notes", "{x}"]},
                           "b": {"command": PY, "args": SERVER[1:] + ["--name", "b", "echo", "--token",
                                                         "${MY_TOKEN}", "{x}"]}},
            "namespaces": {"one": {"servers": ["a"]}, "two": {"servers": ["b"]}}, "defaultNamespace": "one"})
        self.env["MY_TOKEN"] = "tok-secret-4711"
        proc = self.cli("status", "--config", config, "--check")
        self.assertRegex(proc.stdout, r"\na +ok, 1 tools")
        self.assertRegex(proc.stdout, r"\nb +skipped: not in namespace one")
        self.assertIn("namespace one (defaultNamespace in the config); servers: a", proc.stderr)
        self.assertNotIn("no namespaces", proc.stderr)
        self.assertIn(os.path.join(self.home, "notes"), proc.stdout)
        self.assertIn("--token ***", proc.stdout)
        self.assertNotIn("tok-secret-4711", proc.stdout + proc.stderr)

    def test_a_server_can_have_a_short_prefix(self):
        # `prefix` replaces the server key in its tool names ("" for bare names); a bad one makes only
        # that server unusable, with a message naming the key.
        config = self.write_json(os.path.join(self.dir, "all.json"), {"mcpServers": {
            "io.github.example/long-server-name": {"command": PY, "args": SERVER[1:] + ["echo", "{m}"], "prefix": "ex"},
            "bare": {"command": PY, "args": SERVER[1:] + ["--name", "plain", "echo", "{m}"], "prefix": ""},
            "bad": {"command": PY, "args": SERVER[1:] + ["echo", "{m}"], "prefix": "no spaces"}}})
        listing = json.loads(self.cli("inspect", "--json", "--no-manager-tools", "serve", "--config", config).stdout)
        self.assertEqual([t["name"] for t in listing["tools"]], ["ex__echo", "plain"])
        self.assertEqual(self.cli("call", "ex__echo", "m=short", "serve", "--config", config).stdout, "short\n")
        self.assertIn("mcpServers.bad.prefix", self.cli("status", "--config", config, code=1).stdout)

    def test_readme_quick_start(self):
        # The README's three quick-start commands run as written (inspect, call, install --write), and
        # the entry written into ~/.claude.json serves the tool from the client's own folder.
        import shlex
        if not shutil.which("git") or not os.path.isdir(os.path.join(HERE, ".git")) and not os.path.isfile(
                os.path.join(HERE, ".git")):
            self.skipTest("needs git and this repository's checkout")
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        block = readme.split("**Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
        commands = [shlex.split(line, comments=True) for line in block.splitlines()]
        self.assertEqual(len(commands), 3, block)
        outputs = []
        for words in commands:
            self.assertEqual(words[:2], ["python3", "mcpstudio.py"], words)
            proc = subprocess.run([PY, MODULE] + words[2:], capture_output=True, text=True, timeout=WAIT * 2,
                                  stdin=subprocess.DEVNULL, env=self.env, cwd=HERE)
            self.assertEqual(proc.returncode, 0, "%s\n%s%s" % (words, proc.stdout, proc.stderr))
            outputs.append(proc.stdout)
        self.assertIn("repo", outputs[0])
        self.assertEqual(len(outputs[1].splitlines()), 3, outputs[1])
        entry = self.read_json(os.path.join(self.home, ".claude.json"))["mcpServers"]["git"]
        with McpProcess(cmd=[entry["command"]] + entry["args"], cwd=self.home, env=dict(self.env, **entry["env"])) as server:
            server.initialize()
            result = server.call("git", {"repo": HERE, "limit": "1"})
            self.assertEqual(len(text_of(result).splitlines()), 1, result)

    @unittest.skipUnless(hasattr(os, "openpty"), "needs a pseudo-terminal")
    def test_progress_on_a_terminal_for_status_check(self):
        # status --check over slow servers counts them on stderr when it is a terminal, and not when it
        # is a pipe.
        slow = "import os, sys, time; time.sleep(0.4); os.execv(sys.executable, [sys.executable] + sys.argv[1:])"
        config = self.write_json(os.path.join(self.dir, "slow.json"), {"mcpServers": {
            name: {"command": PY, "args": ["-c", slow, MODULE, "--name", name, "echo", "{x}"]}
            for name in ("s1", "s2", "s3", "s4", "s5")}})
        leader, follower = os.openpty()
        self.addCleanup(os.close, leader)
        proc = subprocess.Popen(SERVER + ["status", "--check", "--config", config], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=follower, env=self.env)
        os.close(follower)
        out = proc.communicate(timeout=WAIT * 2)[0].decode()
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO once the child side is closed
                break
            if not chunk:
                break
            seen += chunk
        self.assertEqual(proc.returncode, 0, out)
        self.assertRegex(seen.decode(), r"mcpstudio: checked [1-5]/5 \(s\d\)")
        self.assertNotIn("checked", self.cli("status", "--check", "--config", config).stderr)

    # --- zipapp ----------------------------------------------------------

    def test_zipapp_carries_bytecode_and_source(self):
        # The .pyz serves tools; this Python imports mcpstudio from the .pyc inside, and a Python of
        # another version (3.8 when it is installed) falls back to the source.
        pyz = os.path.join(self.dir, "mcpstudio.pyz")
        self.assertIn("wrote", self.cli("zipapp", pyz).stdout)
        # What runpy runs for `python3 OUT.pyz` (zipimport's file for __main__), and what `import mcpstudio` loads.
        probe = ("import sys, zipimport; print(zipimport.zipimporter(sys.argv[1]).get_filename('__main__')); "
                 "sys.path.insert(0, sys.argv[1]); import mcpstudio; print(mcpstudio.__file__)")
        used = subprocess.run([PY, "-c", probe, pyz], capture_output=True, text=True, timeout=WAIT).stdout.split()
        self.assertEqual(used, [os.path.join(pyz, "__main__.py"), os.path.join(pyz, "mcpstudio.pyc")])
        import zipfile
        with zipfile.ZipFile(pyz) as archive:  # the module once; its bytecode stored, read without inflating
            kinds = {info.filename: info.compress_type for info in archive.infolist()}
            self.assertEqual(kinds, {"__main__.py": zipfile.ZIP_DEFLATED, "mcpstudio.py": zipfile.ZIP_DEFLATED,
                                     "mcpstudio.pyc": zipfile.ZIP_STORED})
        # `python3 OUT.pyz` unmarshals the module's bytecode once (zipimport's own find_spec would do it twice).
        once = ("import marshal, runpy, sys\nloads, sizes = marshal.loads, []\n"
                "marshal.loads = lambda data: sizes.append(len(data) * ('zipimport' in sys._getframe(1).f_code.co_filename))"
                " or loads(data)\n"
                "sys.argv = [sys.argv[1], '--version']\ntry:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
                "except SystemExit as stop:\n    print(stop.code, sum(size > 100000 for size in sizes))\n")
        ran = subprocess.run([PY, "-c", once, pyz], capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(ran.stdout.split()[-2:], ["0", "1" if sys.version_info >= (3, 10) else "2"], ran.stderr)
        unpacked = os.path.join(self.dir, "unpacked")
        with zipfile.ZipFile(pyz) as archive:  # unzipped into a folder, it runs as well (no zipimport there)
            archive.extractall(unpacked)
        ran = subprocess.run([PY, unpacked, "--version"], capture_output=True, text=True, timeout=WAIT)
        self.assertTrue(ran.stdout.startswith("mcpstudio "), ran.stderr)
        with McpProcess(cmd=[PY, pyz, "echo", "{message}"]) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("echo", {"message": "zipped"})), "zipped\n")
            self.assertEqual(server.close(), 0)
        entry = json.loads(subprocess.run([PY, pyz, "install", "--client", "cursor", "echo", "{m}"], capture_output=True,
                                          text=True, timeout=WAIT, env=self.env).stdout)["mcpServers"]["echo"]
        self.assertEqual(entry["args"], [pyz, "echo", "{m}"])  # install from the zipapp points at the .pyz
        other = [p for p in (os.path.expanduser("~/.pyenv/versions/3.8.18/bin/python3"),
                             os.path.expanduser("~/.pyenv/versions/3.13.0/bin/python3"))
                 if os.path.exists(p) and subprocess.run(
                     [p, "-c", "import sys; sys.exit(sys.version_info[:2] == %r)" % (sys.version_info[:2],)],
                     timeout=WAIT).returncode == 0]
        if not other:
            self.skipTest("no second Python version to check the source fallback")
        used = subprocess.run([other[0], "-c", probe, pyz], capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(used.stdout.split(), [os.path.join(pyz, "__main__.py"), os.path.join(pyz, "mcpstudio.py")],
                         used.stderr)
        proc = subprocess.run([other[0], pyz, "call", "echo", "message=fallback", "echo", "{message}"],
                              capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(proc.stdout, "fallback\n", proc.stderr)


class ToolingConfigFormatTests(ToolingCase):
    """The tooling subcommands on mcp-studio's own config formats, and what they refuse as the server would."""

    def check_loads(self, path):
        proc = self.cli("check", "--config", path)
        self.assertIn("ok", proc.stdout)

    def test_remove_cleans_server_ids_defaults_and_permissions(self):
        # `remove b` drops b (named by key or by id) from serverIds, serverDefaults and toolPermissions,
        # keeps the rest, and the config still loads (it failed on the dangling references before).
        path = self.write_json(os.path.join(self.dir, "studio.json"), {
            "mcpServers": {"a": {"command": "x"}, "b.c": {"command": "y"}},
            "namespaces": {"dev": {"serverIds": ["a", "b_c"], "denyByDefault": True,
                                   "serverDefaults": {"a": False, "b.c": True}}},
            "toolPermissions": [{"namespace": "dev", "server": "b_c", "toolName": "t", "enabled": True},
                                {"namespace": "dev", "server": "a", "toolName": "t", "enabled": False}],
            "defaultNamespaceId": "dev"})
        self.check_loads(path)
        self.cli("remove", "b.c", "--config", path)
        data = self.read_json(path)
        self.assertEqual(data["namespaces"], {"dev": {"serverIds": ["a"], "denyByDefault": True,
                                                      "serverDefaults": {"a": False}}})
        self.assertEqual(data["toolPermissions"], [{"namespace": "dev", "server": "a", "toolName": "t",
                                                    "enabled": False}])
        self.assertEqual(data["defaultNamespaceId"], "dev")
        self.check_loads(path)
        # The last permission gone, the key goes too (an empty list would be kept as is, but is noise).
        self.cli("remove", "a", "--config", path)
        self.assertNotIn("toolPermissions", self.read_json(path))
        self.check_loads(path)

    def test_server_ids_namespace_listed_and_assigned(self):
        # A namespace given by serverIds shows its members in `list`, and `namespace assign` extends
        # serverIds (not a `servers` key the server would ignore).
        path = self.write_json(os.path.join(self.dir, "studio.json"), {
            "mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}},
            "namespaces": {"dev": {"serverIds": ["a"]}}, "defaultNamespaceId": "dev"})
        self.assertRegex(self.cli("list", "--config", path).stdout, r"a\s+x\s+\[dev\]")
        self.assertIn("default namespace dev", self.cli("list", "--config", path).stdout)
        self.cli("namespace", "assign", "dev", "b", "--config", path)
        self.assertEqual(self.read_json(path)["namespaces"], {"dev": {"serverIds": ["a", "b"]}})
        listed = json.loads(self.cli("list", "--json", "--config", path).stdout)
        self.assertEqual([(s["name"], s["namespaces"]) for s in listed["servers"]], [("a", ["dev"]), ("b", ["dev"])])
        self.assertEqual(listed["defaultNamespace"], "dev")
        self.cli("namespace", "default", "dev", "--config", path)
        self.assertNotIn("defaultNamespace", self.read_json(path))  # the key the file uses is kept
        self.check_loads(path)

    def test_list_form_namespaces(self):
        # mcp-studio's list of {id, serverIds}: list, add, assign, remove and a server's removal all
        # work on it (they crashed with AttributeError or TypeError before), and the file loads after.
        path = self.write_json(os.path.join(self.dir, "studio.json"), {
            "mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}},
            "namespaces": [{"id": "dev", "name": "Dev", "serverIds": ["a"], "serverDefaults": {"a": True}}],
            "toolPermissions": [{"namespace": "dev", "server": "a", "toolName": "t", "enabled": True}],
            "defaultNamespaceId": "dev"})
        self.assertRegex(self.cli("list", "--config", path).stdout, r"a\s+x\s+\[dev\]")
        self.cli("namespace", "assign", "dev", "b", "--config", path)
        self.cli("namespace", "add", "ops", "b", "--config", path)
        self.assertIn("already has a namespace ops",
                      self.cli("namespace", "add", "ops", "--config", path, code=1).stderr)
        data = self.read_json(path)
        self.assertEqual(data["namespaces"], [
            {"id": "dev", "name": "Dev", "serverIds": ["a", "b"], "serverDefaults": {"a": True}},
            {"id": "ops", "name": "ops", "serverIds": ["b"]}])
        self.check_loads(path)
        self.cli("remove", "a", "--config", path)
        data = self.read_json(path)
        self.assertEqual(data["namespaces"][0], {"id": "dev", "name": "Dev", "serverIds": ["b"], "serverDefaults": {}})
        self.assertNotIn("toolPermissions", data)
        self.check_loads(path)
        self.cli("namespace", "remove", "dev", "--config", path)
        data = self.read_json(path)
        self.assertEqual(data["namespaces"], [{"id": "ops", "name": "ops", "serverIds": ["b"]}])
        self.assertNotIn("defaultNamespaceId", data)
        self.check_loads(path)

    def test_namespace_remove_drops_its_permissions(self):
        # Removing a namespace removes the toolPermissions that name it (the server refuses a
        # permission for a namespace that is not configured).
        path = self.write_json(os.path.join(self.dir, "studio.json"), {
            "mcpServers": {"a": {"command": "x"}},
            "namespaces": {"dev": {"servers": ["a"]}, "ops": {"servers": ["a"]}},
            "toolPermissions": [{"namespaceId": "dev", "serverId": "a", "toolName": "t", "enabled": True},
                                {"namespace": "ops", "server": "a", "toolName": "t", "enabled": True}]})
        self.cli("namespace", "remove", "dev", "--config", path)
        self.assertEqual(self.read_json(path)["toolPermissions"], [
            {"namespace": "ops", "server": "a", "toolName": "t", "enabled": True}])
        self.check_loads(path)

    def test_add_and_import_refuse_colliding_ids(self):
        # `add a.x` next to `a_x` is refused (both would have the id a_x and the config would not
        # load); import skips such a name with the reason, also between two names it imports.
        path = os.path.join(self.dir, "c.json")
        self.cli("add", "a_x", "--config", path, "--", "uvx", "one")
        proc = self.cli("add", "a.x", "--config", path, "--", "uvx", "two", code=1)
        self.assertIn("same id `a_x`", proc.stderr)
        self.assertEqual(list(self.read_json(path)["mcpServers"]), ["a_x"])
        self.cli("add", "a_x", "--config", path, "--", "uvx", "three")  # the same name is replaced
        self.assertEqual(self.read_json(path)["mcpServers"]["a_x"]["args"], ["three"])
        source = self.write_json(os.path.join(self.dir, "client.json"), {"mcpServers": {
            "a x": {"command": "p"}, "new.one": {"command": "q"}, "new_one": {"command": "r"}}})
        proc = self.cli("import", source, "--config", path, "--write")
        self.assertIn("skip    a x: its id `a_x` is also the id of server a_x", proc.stdout)
        self.assertIn("skip    new_one: its id `new_one` is also the id of server new.one", proc.stdout)
        self.assertEqual(list(self.read_json(path)["mcpServers"]), ["a_x", "new.one"])
        self.check_loads(path)

    def test_install_refuses_what_the_server_refuses(self):
        # install checks the mode first: a template the server refuses (code in `sh -c`), a bad
        # config or a missing script folder exits 2 with the server's own error, prints no entry
        # and writes nothing.
        server = self.cli("sh", "-c", "{code}", code=2)
        self.assertIn("bad template", server.stderr)
        proc = self.cli("install", "--client", "codex", "sh", "-c", "{code}", code=2)
        self.assertEqual((proc.stdout, proc.stderr), ("", server.stderr))
        proc = self.cli("install", "--client", "claude-code", "--write", "sh", "-c", "{code}", code=2)
        self.assertFalse(os.path.exists(os.path.join(self.home, ".claude.json")))
        bad = self.write_json(os.path.join(self.dir, "bad.json"), {"tools": [{"name": "x"}]})
        server = self.cli("serve", "--config", bad, code=1)
        proc = self.cli("install", "--client", "cursor", "--write", "serve", "--config", bad, code=2)
        self.assertEqual((proc.stdout, proc.stderr), ("", server.stderr))
        self.assertIn("tools[0]", proc.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.home, ".cursor")))
        proc = self.cli("install", "--client", "cursor", "--root-directory", "missing", code=2)
        self.assertIn("--root-directory missing: no such folder", proc.stderr)
        self.assertEqual(proc.stdout, "")

    def test_call_help_examples_run(self):
        # Each local example of `call --help` runs as written (the template tool is named after
        # its command: `git`, not `git_log`).
        import shlex
        if not shutil.which("git") or not os.path.exists(os.path.join(HERE, ".git")):
            self.skipTest("needs git and this repository's checkout")
        lines = [line.strip() for line in self.cli("call", "--help").stdout.splitlines()
                 if line.strip().startswith("mcpstudio call ") and " -- " not in line and "--url" not in line]
        self.assertEqual(len(lines), 2, lines)
        for line in lines:
            words = shlex.split(line)[1:]
            proc = self.cli(*words, cwd=HERE)
            self.assertTrue(proc.stdout.strip(), line)

    def test_servers_list_counts_listed_tools(self):
        # servers_list's `tools` is the number of the server's tools in tools/list: those its
        # allow/deny filter or a toolPermissions entry leave out are not counted.
        upstream = self.write_json(os.path.join(self.dir, "up.json"), {"tools": [
            {"name": name, "command": "echo %s" % name} for name in ("one", "two", "three", "four")]})
        config = self.write_json(os.path.join(self.dir, "agg.json"), {
            "mcpServers": {"u": {"command": PY, "args": SERVER[1:] + ["serve", "--config", upstream],
                                 "tools": {"deny": ["two"]}}},
            "namespaces": {"ns": {"servers": ["u"], "tools": {"deny": ["u__four"]}}}, "defaultNamespace": "ns",
            "toolPermissions": [{"namespace": "ns", "server": "u", "toolName": "three", "enabled": False}]})
        env = dict(self.env, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        with McpProcess("serve", "--config", config, env=env) as server:
            server.initialize()
            names = [t["name"] for t in server.request("tools/list")["result"]["tools"]]
            self.assertEqual([n for n in names if n.startswith("u__")], ["u__one"], server.context())
            status = server.call("mcpstudio__servers_list", {})["structuredContent"]["servers"][0]
            self.assertEqual(status["tools"], 1, status)
            self.assertEqual(server.close(), 0)


class CachedEntryTests(ToolingCase):
    """Issue 21: the entry install writes (and the README's snippets) starts from cached bytecode."""

    def copy_module(self, folder) -> str:
        os.makedirs(folder)
        shutil.copy(MODULE, folder)
        return os.path.join(folder, "mcpstudio.py")

    def entry(self, module, *words, env=None):
        proc = subprocess.run([PY, module, "install", "--client", "claude-desktop"] + list(words), capture_output=True,
                              text=True, timeout=WAIT, env=env or self.env, stdin=subprocess.DEVNULL)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return list(json.loads(proc.stdout)["mcpServers"].values())[0]

    def serve(self, entry, env=None):
        """The entry started as a client starts it: its command, args and env, in another folder."""
        env = dict(env or self.env, **entry["env"])
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        return McpProcess(cmd=[entry["command"]] + entry["args"], cwd=self.home, env=env)

    def version(self, entry, env=None) -> str:
        with self.serve(entry, env) as server:
            return server.initialize()["result"]["serverInfo"]["version"]

    def edit_version(self, module, version):
        with open(module) as f:
            text = f.read()
        with open(module, "w") as f:
            f.write(re.sub(r'__version__ = "[^"]*"', '__version__ = "%s"' % version, text, count=1))

    def test_entry_runs_cached_bytecode_and_picks_up_an_edit(self):
        # The entry is python3 [-P] -m mcpstudio with the module's folder on PYTHONPATH; its first start
        # leaves bytecode beside the module, and an edited module runs at once (import checks the source).
        module = self.copy_module(os.path.join(self.dir, "dl"))
        entry = self.entry(module, "printenv", "{name}")
        self.assertEqual(entry["args"], ENTRY_ARGS + ["printenv", "{name}"])
        self.assertEqual(entry["env"]["PYTHONPATH"], os.path.dirname(module))
        self.assertNotIn("PYTHONPYCACHEPREFIX", entry["env"])
        with self.serve(entry) as server:
            self.assertEqual(server.initialize()["result"]["serverInfo"]["version"], mcpstudio.__version__)
            # What the entry added to the environment reaches no command the tool runs.
            self.assertTrue(server.call("printenv", {"name": "PYTHONPATH"})["isError"])
            self.assertEqual(text_of(server.call("printenv", {"name": "HOME"})).strip(), self.home)
        cached = os.listdir(os.path.join(os.path.dirname(module), "__pycache__"))
        self.assertTrue([n for n in cached if n.startswith("mcpstudio.") and n.endswith(".pyc")], cached)
        self.edit_version(module, "9.9.9-edited")
        self.assertEqual(self.version(entry), "9.9.9-edited")

    def test_entry_for_a_read_only_folder_caches_in_the_user_cache(self):
        # Where the module's folder cannot hold __pycache__, the entry adds PYTHONPYCACHEPREFIX in the
        # user's cache folder; the bytecode lands there, and an edit is picked up there too.
        module = self.copy_module(os.path.join(self.dir, "ro"))
        cache = os.path.join(self.home, "cache")
        env = dict(self.env, XDG_CACHE_HOME=cache)
        from unittest import mock
        with mock.patch.dict(os.environ, env, clear=True), mock.patch.object(mcpstudio.os, "access", return_value=False):
            argv, entry_env = mcpstudio.cached_command()
        self.assertEqual(entry_env["PYTHONPYCACHEPREFIX"], os.path.join(cache, "mcpstudio", "bytecode"))
        entry = {"command": argv[0], "args": argv[1:] + ["printenv", "{name}"],
                 "env": dict(entry_env, PYTHONPATH=os.path.dirname(module))}
        with self.serve(entry, env) as server:
            server.initialize(timeout=60)  # compiles the whole module first: slow under coverage on a busy machine
            self.assertTrue(server.call("printenv", {"name": "PYTHONPYCACHEPREFIX"})["isError"])
        found = [name for _, _, names in os.walk(entry_env["PYTHONPYCACHEPREFIX"]) for name in names]
        self.assertTrue([n for n in found if n.startswith("mcpstudio.") and n.endswith(".pyc")], found)
        self.edit_version(module, "9.9.9-prefix")
        self.assertEqual(self.version(entry, env), "9.9.9-prefix")

    def test_a_zipapp_or_a_renamed_copy_runs_as_it_is(self):
        # Only a file named like a module can be started with -m; any other copy keeps the script form.
        module = self.copy_module(os.path.join(self.dir, "odd"))
        renamed = os.path.join(os.path.dirname(module), "mcp-studio.py")
        os.rename(module, renamed)
        entry = self.entry(renamed, "echo", "{m}")
        self.assertEqual(entry["args"], [renamed, "echo", "{m}"])
        self.assertNotIn("PYTHONPATH", entry["env"])


@unittest.skipUnless(hasattr(os, "symlink") and os.name == "posix", "symlinks")
class SymlinkedConfigTests(ToolingCase):
    """Issue 21: every editing command writes through a symlinked config (a dotfiles manager's)."""

    def linked(self, name, text):
        """`name` in HOME as a link to a file of the same name in HOME/dotfiles holding `text`."""
        target = self.write_json(os.path.join(self.home, "dotfiles", os.path.basename(name)), None, text)
        os.chmod(target, 0o640)
        link = os.path.join(self.home, name)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(target, link)
        return link, target

    def test_each_editing_command_keeps_the_link(self):
        link, target = self.linked(os.path.join(".config", "mcpstudio", "config.json"), '{"mcpServers": {}}')
        source = self.write_json(os.path.join(self.dir, "desktop.json"), {"mcpServers": {"imported": {"command": "x"}}})
        steps = [(("add", "one", "--", "echo", "hi"), lambda d: "one" in d["mcpServers"]),
                 (("namespace", "add", "ns", "one"), lambda d: d["namespaces"]["ns"]["servers"] == ["one"]),
                 (("namespace", "default", "ns"), lambda d: d["defaultNamespace"] == "ns"),
                 (("import", source, "--write"), lambda d: "imported" in d["mcpServers"]),
                 (("remove", "one"), lambda d: "one" not in d["mcpServers"])]
        for words, holds in steps:
            with self.subTest(command=words[:2]):
                self.cli(*words)
                self.assertTrue(os.path.islink(link), words)
                self.assertEqual(os.readlink(link), target)
                data = self.read_json(target)
                self.assertTrue(holds(data), data)
                self.assertEqual(os.stat(target).st_mode & 0o777, 0o640)  # its mode kept
                self.assertTrue(os.path.exists(link + ".bak"))  # the backup beside the name given
        # install --write into a client's config that is a link (Claude Code's ~/.claude.json).
        claude, claude_target = self.linked(".claude.json", '{"mcpServers": {}}')
        self.cli("install", "--client", "claude-code", "--write", "echo", "{message}")
        self.assertTrue(os.path.islink(claude))
        self.assertIn("echo", self.read_json(claude_target)["mcpServers"])

    def test_a_read_only_target_is_refused_and_left_alone(self):
        link, target = self.linked(os.path.join(".config", "mcpstudio", "config.json"), '{"mcpServers": {}}')
        os.chmod(target, 0o444)
        for words in (("add", "one", "--", "echo", "hi"), ("namespace", "add", "ns")):
            with self.subTest(command=words[0]):
                proc = self.cli(*words, code=1)
                self.assertIn("%s (the target of the link %s) is read-only; nothing was changed" % (target, link),
                              proc.stderr)
                with open(target) as f:
                    self.assertEqual(f.read(), '{"mcpServers": {}}')
                self.assertTrue(os.path.islink(link))
                self.assertEqual(sorted(os.listdir(os.path.dirname(target))), ["config.json"])  # no temporary left
        claude, claude_target = self.linked(".claude.json", "{}")
        os.chmod(claude_target, 0o444)
        proc = self.cli("install", "--client", "claude-code", "--write", "echo", "{message}", code=1)
        self.assertIn("%s (the target of the link %s) is read-only" % (claude_target, claude), proc.stderr)


CLAUDE = os.environ.get("MCPSTUDIO_CLAUDE", "")


@unittest.skipUnless(CLAUDE and os.path.exists(CLAUDE), "the Claude Code CLI is not installed (set MCPSTUDIO_CLAUDE)")
class ClaudeCodeInteropTests(ToolingCase):
    """The real Claude Code CLI (npm @anthropic-ai/claude-code) sees what `install --client claude-code` prints."""

    def test_every_mode_connects_in_claude_code(self):
        # With a throwaway HOME, `claude mcp add-json` takes each printed entry (template, script folder,
        # config, aggregator, HTTP), `install --write` adds one more, and `claude mcp list` reports every
        # one as connected.
        self.greeter(os.path.join(self.dir, "scripts"))
        config = self.write_json(os.path.join(self.dir, "tools.json"), {"tools": [{"name": "say", "command": "echo {t}"}]})
        aggregator = self.write_json(os.path.join(self.dir, "all.json"), {"mcpServers": {
            "inner": {"command": PY, "args": SERVER[1:] + ["echo", "{message}"]}}})
        modes = {"tmpl": ["echo", "{message}"], "scripts": ["--root-directory", "scripts"],
                 "config": ["serve", "--config", config], "agg": ["serve", "--config", aggregator]}
        web = HttpServerProcess("echo", "{message}", env=self.env)
        self.addCleanup(web.__exit__)
        modes["web"] = ["--http", "127.0.0.1:%d" % web.port, "echo", "{message}"]
        self.cli("install", "--client", "claude-code", "--write", "--as", "quick", "echo", "{message}")  # the quick start
        for name, words in modes.items():
            printed = self.cli("install", "--client", "claude-code", "--as", name, *words).stdout
            entry = json.loads(printed)["mcpServers"][name]
            proc = subprocess.run([CLAUDE, "mcp", "add-json", "--scope", "user", name, json.dumps(entry)],
                                  capture_output=True, text=True, timeout=60, env=self.env, cwd=self.home,
                                  stdin=subprocess.DEVNULL)
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        proc = subprocess.run([CLAUDE, "mcp", "list"], capture_output=True, text=True, timeout=120, env=self.env,
                              cwd=self.home, stdin=subprocess.DEVNULL)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for name in list(modes) + ["quick"]:
            self.assertRegex(proc.stdout, r"(?m)^%s: .*Connected" % name, proc.stdout)
        self.assertEqual(sorted(self.read_json(os.path.join(self.home, ".claude.json"))["mcpServers"]),
                         sorted(list(modes) + ["quick"]))


class HttpServerProcess(McpProcess):
    """mcpstudio --http 127.0.0.1:0 ...; `port` is read from its startup line on stderr."""

    def __init__(self, *args, env=None, bind="127.0.0.1:0"):
        super().__init__("--http", bind, *args, env=env)
        self.port, self.path = None, "/mcp"
        deadline = time.monotonic() + WAIT
        while self.port is None and time.monotonic() < deadline:
            for line in list(self.stderr):
                found = re.search(r"serving MCP at http://\S+?:(\d+)/mcp", line)
                if found:
                    self.port = int(found.group(1))
            time.sleep(0.02)
        if self.port is None:
            raise AssertionError("no 'serving MCP at' line%s" % self.context())

    def post(self, message, headers=None, session=None, raw=None, method="POST", timeout=WAIT):
        """(status, headers dict, body text) of one request to /mcp."""
        import http.client
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if session:
            sent["Mcp-Session-Id"] = session
        sent.update(headers or {})
        body = raw if raw is not None else (json.dumps(message).encode() if message is not None else None)
        connection.request(method, self.path, body=body, headers=sent)
        response = connection.getresponse()
        text = response.read().decode()
        connection.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, text

    def __exit__(self, *exc):
        # Served over HTTP, it does not read stdin: SIGTERM stops it (coverage saves on SIGTERM), where
        # McpProcess's stdin EOF would wait 3 s first.
        if self.proc.poll() is None:
            self.proc.terminate()
        return super().__exit__(*exc)

    @staticmethod
    def messages(text):
        """The JSON-RPC messages of a JSON or SSE body."""
        if text.lstrip().startswith("{"):
            return [json.loads(text)]
        return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]

    def modern(self, method, params=None, request_id=1, headers=None):
        params = dict(params or {}, _meta=dict(MODERN_META, **(params or {}).get("_meta", {})))
        sent = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
        if method in ("tools/call", "prompts/get"):
            sent["Mcp-Name"] = params.get("name", "")
        sent.update(headers or {})
        return self.post({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, sent)

    def initialize_session(self):
        status, headers, text = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        assert status == 200, (status, text)
        session = headers["mcp-session-id"]
        status, _, _ = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session=session)
        assert status == 202, status
        return session


class HttpTests(ScratchDir):
    def test_handshake_era_sessions(self):
        with HttpServerProcess("echo", "{message}") as server:
            session = server.initialize_session()
            self.assertRegex(session, r"^[\x21-\x7e]+$")
            status, headers, text = server.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "echo", "arguments": {"message": "over http"}, "_meta": {"progressToken": "p"}}}, session=session)
            self.assertEqual((status, headers["content-type"]), (200, "text/event-stream"))
            messages = server.messages(text)
            self.assertEqual(messages[0]["method"], "notifications/progress")  # progress first, on its stream
            self.assertEqual(messages[-1]["result"]["content"][0]["text"], "over http\n")
            status, headers, text = server.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, session=session)
            self.assertEqual((status, headers["content-type"]), (200, "application/json"))
            self.assertEqual(json.loads(text)["result"]["tools"][0]["name"], "echo")
            status, _, text = server.post({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
            self.assertEqual(status, 400)
            self.assertIn("Mcp-Session-Id", json.loads(text)["error"]["message"])
            self.assertEqual(server.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, session="nope")[0], 404)
            bad = server.post({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}, session=session,
                              headers={"MCP-Protocol-Version": "1999-01-01"})
            self.assertEqual(bad[0], 400)
            # A call the client cancels ends its stream without a response (no POST left hanging).
            import http.client
            sleeper = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            sleeper.request("POST", "/mcp", json.dumps({"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": {
                "name": "echo", "arguments": {"message": "x"}}}), {"Content-Type": "application/json",
                "Accept": "application/json, text/event-stream", "Mcp-Session-Id": session})
            server.post({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "s"}},
                        session=session)
            reply = sleeper.getresponse().read().decode()  # the call's answer, or an ended stream: never a hang
            self.assertNotIn('"error"', reply)
            sleeper.close()
            self.assertEqual(server.post(None, session=session, method="DELETE")[0], 200)
            self.assertEqual(server.post({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, session=session)[0], 404)
            self.assertEqual(server.post(None, method="GET")[0], 405)

    def test_protocol_2026_07_28_over_http(self):
        with HttpServerProcess("echo", "{message}") as server:
            status, _, text = server.modern("server/discover")
            self.assertEqual(status, 200)
            self.assertEqual(json.loads(text)["result"]["resultType"], "complete")
            status, headers, text = server.modern("tools/call", {"name": "echo", "arguments": {"message": "m"}})
            self.assertEqual(status, 200)
            self.assertEqual(server.messages(text)[-1]["result"]["content"][0]["text"], "m\n")
            self.assertNotIn("mcp-session-id", headers)  # stateless: no sessions in this era
            cases = [  # (method, params, extra headers) -> (HTTP status, JSON-RPC code)
                ("tools/list", None, {"Mcp-Method": "tools/call"}, 400, -32020),
                ("tools/list", None, {"MCP-Protocol-Version": "2025-11-25"}, 400, -32020),
                ("tools/call", {"name": "echo", "arguments": {}}, {"Mcp-Name": "other"}, 400, -32020),
                ("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}},
                 {"MCP-Protocol-Version": "2099-01-01"}, 400, -32022),
                ("ping", None, {}, 404, -32601),
                ("initialize", None, {}, 404, -32601),
            ]
            for method, params, extra, want_status, want_code in cases:
                with self.subTest(method=method, extra=extra):
                    status, _, text = server.modern(method, params, request_id=9, headers=extra)
                    reply = json.loads(text)
                    self.assertEqual((status, reply["error"]["code"], reply["id"]), (want_status, want_code, 9))
            status, _, text = server.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
                                          {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
            self.assertEqual((status, json.loads(text)["error"]["code"]), (400, -32602))  # no _meta
            unsupported = json.loads(server.modern("tools/list", {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}, headers={"MCP-Protocol-Version": "2099-01-01"})[2])
            self.assertEqual(unsupported["error"]["data"], {"supported": ["2026-07-28"], "requested": "2099-01-01"})
            # Header names are case-insensitive, values trimmed, =?base64?...?= decoded.
            status, _, text = server.modern("tools/call", {"name": "echo", "arguments": {"message": "b"}},
                                            headers={"Mcp-Name": "  =?base64?ZWNobw==?=  "})
            self.assertEqual(status, 200, text)

    def test_dns_rebinding_tokens_and_limits(self):
        with HttpServerProcess("echo", "{message}") as server:
            for headers in ({"Host": "evil.example.com"}, {"Origin": "http://evil.example.com"},
                            {"Host": "127.0.0.1.evil.example:%d" % server.port,
                             "Origin": "http://127.0.0.1.evil.example:%d" % server.port},
                            {"Origin": "null"}):
                with self.subTest(headers=headers):
                    self.assertEqual(server.modern("tools/list", headers=headers)[0], 403)
            ok = server.modern("tools/list", headers={"Origin": "http://127.0.0.1:%d" % server.port})
            self.assertEqual(ok[0], 200)
            import socket
            with socket.create_connection(("127.0.0.1", server.port)) as raw:  # refused before it is sent
                raw.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                            b"Content-Length: %d\r\n\r\n{" % (5 << 20))
                self.assertTrue(raw.recv(4096).startswith(b"HTTP/1.1 413 "))
            self.assertEqual(server.post(None, raw=b"{}", headers={"X-Big": "y" * 20000})[0], 431)
            self.assertEqual(server.post(None, raw=b"{}", headers={"Content-Type": "text/plain"})[0], 415)
            self.assertEqual(server.post(None, raw=b"{}", headers={"Content-Type": "text/plain;x=application/json"})[0], 415)
            for bad_id in (1.5, True, [1], {"a": 1}):
                with self.subTest(id=bad_id):
                    status, _, text = server.modern("tools/list", request_id=bad_id)
                    self.assertEqual((status, json.loads(text)["error"]["code"]), (400, -32600))
            self.assertEqual(server.post(None, raw=b"{not json")[0], 400)
        env = dict(os.environ, MCPSTUDIO_HTTP_TOKEN="tok-4567-secret")
        with HttpServerProcess("echo", "{message}", env=env) as server:
            self.assertEqual(server.modern("tools/list")[0], 401)
            self.assertEqual(server.modern("tools/list", headers={"Authorization": "Bearer wrong"})[0], 401)
            self.assertEqual(server.modern("tools/list", headers={"Authorization": "Bearer tok-4567-secret"})[0], 200)
        proc = subprocess.run(SERVER + ["--http", "0.0.0.0:0", "echo", "{m}"], capture_output=True, text=True,
                              timeout=WAIT, env=dict(os.environ, MCPSTUDIO_HTTP_TOKEN=""))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("set a bearer token with --http-token", proc.stderr)
        with HttpServerProcess("--http-token", "tok-7890-secret", "echo", "{message}", bind="0.0.0.0:0") as server:
            self.assertEqual(server.modern("tools/list")[0], 401)
            ok = server.modern("tools/list", headers={"Authorization": "Bearer tok-7890-secret", "Host": "example.net"})
            self.assertEqual(ok[0], 200)

    def test_many_clients_a_stalled_one_and_a_vanished_one(self):
        import socket
        sleeper = self.pid_sleeper()
        pids = os.path.join(self.dir, "pids")
        with HttpServerProcess("--name", "slow", PY, sleeper, "{out}") as slow, \
                HttpServerProcess("echo", "{message}") as server:
            stalled = socket.create_connection(("127.0.0.1", server.port))
            stalled.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never more
            results, errors = [], []

            def client(n):
                try:
                    for i in range(10):
                        text = server.messages(server.modern("tools/call", {
                            "name": "echo", "arguments": {"message": "c%d-%d" % (n, i)}}, request_id=i)[2])[-1]
                        results.append(text["result"]["content"][0]["text"])
                except Exception as exc:  # reported below
                    errors.append(repr(exc))
            threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
            [t.start() for t in threads]
            [t.join(WAIT * 2) for t in threads]
            self.assertEqual(errors, [])
            self.assertEqual(sorted(results), sorted("c%d-%d\n" % (n, i) for n in range(16) for i in range(10)))
            stalled.close()
            # A 2026-07-28 client that disconnects cancels its call: the command's group is stopped.
            raw = socket.create_connection(("127.0.0.1", slow.port))
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "slow", "arguments": {"out": pids}, "_meta": MODERN_META}}).encode()
            raw.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        b"Accept: text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                        b"Mcp-Name: slow\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            child, grandchild = self.read_pids(pids)
            self.assertTrue(alive(child))
            raw.close()
            self.assertTrue(wait_until(lambda: not alive(child) and not alive(grandchild), 10))

    def test_aggregator_and_script_mode_over_http(self):
        fake = self.script("fake_mcp.py", FAKE_SERVER, executable=False)
        config = os.path.join(self.dir, "agg.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"up": {"command": PY, "args": [fake, "--name", "up"]}}}, f)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        with HttpServerProcess("serve", "--config", config, env=env) as server:
            names = [t["name"] for t in json.loads(server.modern("tools/list")[2])["result"]["tools"]]
            self.assertIn("up__echo", names)
            reply = server.messages(server.modern("tools/call", {"name": "up__echo", "arguments": {"text": "h"},
                                                                 "_meta": {"progressToken": 1}})[2])[-1]
            self.assertEqual(reply["result"]["content"][0]["text"], "up: h")
            self.assertEqual(reply["result"]["resultType"], "complete")
            missing = server.messages(server.modern("resources/read", {"uri": "fake://nobody/x"},
                                                    headers={"Mcp-Name": "fake://nobody/x"})[2])[-1]
            self.assertEqual(missing["error"]["code"], -32602)  # not -32002 in this era
            session = server.initialize_session()  # and a handshake-era client beside it
            status, _, text = server.post({"jsonrpc": "2.0", "id": 2, "method": "prompts/list"}, session=session)
            self.assertIn("up__greet", text)
        scripts = os.path.join(HERE, "examples", "scripts")
        with HttpServerProcess("--root-directory", scripts, env=env) as server:  # script mode
            listed = json.loads(server.modern("tools/list")[2])["result"]["tools"]
            self.assertIn("math__calc", [t["name"] for t in listed])
            reply = server.messages(server.modern("tools/call", {
                "name": "math__calc", "arguments": {"operation": "add", "a": 2, "b": 3}})[2])[-1]
            self.assertEqual(reply["result"]["structuredContent"], {"operation": "add", "result": 5.0})


class ThreadedHttpServer:
    """An HTTP server in threads of this test process (the peers below); with `cert`, over TLS."""

    def serve(self, handler, cert=None):
        import http.server
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        if cert:
            import ssl
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert[0], cert[1])
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class LegacySseServer(ThreadedHttpServer):
    """A server of the older HTTP+SSE transport (2024-11-05): GET /sse, then POST to its endpoint.

    Runs in threads of this test process; with `cert`, over TLS."""

    def __init__(self, cert=None):
        import http.server
        import queue
        outbox = self.outbox = queue.Queue()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                if not self.path.startswith("/sse"):
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(b"event: endpoint\ndata: %s\n\n" % owner.endpoint.encode())
                self.wfile.flush()
                while True:
                    message = outbox.get()
                    if message is None:
                        return
                    self.wfile.write(b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n")
                    self.wfile.flush()

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.headers.append(dict(self.headers))
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                method, request_id = body.get("method"), body.get("id")
                if request_id is None:
                    return
                result = {}
                if method == "initialize":
                    result = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                              "serverInfo": {"name": "legacy-sse", "version": "1"}}
                elif method == "tools/list":
                    result = {"tools": [{"name": "shout", "description": "Upper-case text",
                                         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}
                elif method == "tools/call":
                    result = {"content": [{"type": "text", "text": body["params"]["arguments"]["text"].upper()}]}
                outbox.put({"jsonrpc": "2.0", "id": request_id, "result": result})

        self.headers, self.endpoint = [], "/messages?session=1"
        self.serve(Handler, cert)

    def close(self):
        self.outbox.put(None)
        super().close()


class PollingHttpServer(ThreadedHttpServer):
    """A Streamable HTTP server (2025-11-25) that answers `tools/call` of `slow` as SEP-1699 polling
    does: the POST's SSE stream carries a priming event (an id, `retry`, empty data) and closes; the
    answer comes on a GET that names that id in Last-Event-ID. `silent` closes without an id. Runs in
    threads of this test process; `resumes` holds each GET's Last-Event-ID."""

    def __init__(self):
        import http.server
        owner = self
        self.resumes, self.answers = [], {}

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def sse(self, body: bytes):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(body)))  # then the stream is over
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                last = self.headers.get("Last-Event-ID")
                if last is None:  # the session's standalone stream: this server has none
                    self.send_error(405)
                    return
                owner.resumes.append(last)
                if last not in owner.answers:
                    self.send_error(405)
                    return
                self.sse(b"id: %s-1\ndata: %s\n\n" % (last.encode(), json.dumps(owner.answers.pop(last)).encode()))

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                method, request_id = body.get("method"), body.get("id")
                if request_id is None:
                    self.send_response(202)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                result = {}
                if method == "initialize":
                    result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                              "serverInfo": {"name": "polling", "version": "1"}}
                elif method == "tools/list":
                    result = {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in ("slow", "silent")]}
                elif method == "tools/call":
                    stream = "stream-%s" % request_id
                    owner.answers[stream] = {"jsonrpc": "2.0", "id": request_id,
                                             "result": {"content": [{"type": "text", "text": "resumed"}]}}
                    silent = body["params"]["name"] == "silent"
                    self.sse(b"data: \n\n" if silent else b"id: %s\nretry: 50\ndata: \n\n" % stream.encode())
                    return
                data = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if method == "initialize":
                    self.send_header("Mcp-Session-Id", "polling-1")
                self.end_headers()
                self.wfile.write(data)

        self.serve(Handler)


class ConnectProxy(ThreadedHttpServer):
    """An HTTPS proxy (CONNECT tunnels only) that counts the tunnels it opened."""

    def __init__(self):
        import http.server
        import select
        import socket
        owner = self
        self.tunnels = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_CONNECT(self):
                host, port = self.path.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)))
                owner.tunnels.append(self.path)
                self.send_response(200, "Connection established")
                self.end_headers()
                sockets = [self.connection, upstream]
                while True:
                    ready, _, _ = select.select(sockets, [], [], 30)
                    if not ready:
                        break
                    for sock in ready:
                        data = sock.recv(65536)
                        if not data:
                            upstream.close()
                            return
                        (upstream if sock is self.connection else self.connection).sendall(data)

        self.serve(Handler)


def process_cpu(pid):
    """CPU seconds (user and system) a process has used, from /proc; None where there is no /proc."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class HttpResumeTests(ScratchDir):
    """Issue 18, SEP-1699: a handshake-era client that loses a call's event stream resumes it with a GET
    whose Last-Event-ID names the last event it read; nothing is lost or sent twice."""

    def open_stream(self, server, session, headers, body=None, method="POST"):
        import http.client
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT)
        sent = dict({"Accept": "application/json, text/event-stream", "Mcp-Session-Id": session,
                     "MCP-Protocol-Version": "2025-11-25"}, **headers)
        if body is not None:
            sent["Content-Type"] = "application/json"
        connection.request(method, "/mcp", body=json.dumps(body).encode() if body is not None else None, headers=sent)
        response = connection.getresponse()
        self.assertEqual(response.status, 200)
        self.assertEqual(response.getheader("Content-Type"), "text/event-stream")
        return connection, response

    @staticmethod
    def next_event(response) -> dict:
        """The fields of the next SSE event (id, retry, data)."""
        event = {}
        while True:
            line = response.readline().decode().rstrip("\r\n")
            if not line:
                if event:
                    return event
                continue
            key, _, value = line.partition(":")
            event[key] = value.lstrip(" ")

    def test_a_lost_stream_is_resumed(self):
        with HttpServerProcess("sleep", "{seconds}") as server:
            session = server.initialize_session()
            call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                    "params": {"name": "sleep", "arguments": {"seconds": "2.5"}, "_meta": {"progressToken": "p"}}}
            connection, response = self.open_stream(server, session, {}, call)
            priming = self.next_event(response)  # at once, before any message: the id to resume from
            self.assertEqual(priming, {"id": "r1_0", "retry": "1000", "data": ""})
            first = self.next_event(response)
            self.assertEqual(first["id"], "r1_1")
            self.assertEqual(json.loads(first["data"])["method"], "notifications/progress")
            connection.close()  # the stream is lost mid-call
            time.sleep(1.2)  # progress went on meanwhile, to nobody
            connection, response = self.open_stream(server, session, {"Last-Event-ID": "r1_1"}, method="GET")
            seen = []
            while True:
                event = self.next_event(response)
                seen.append((event["id"], json.loads(event["data"])))
                if "id" in seen[-1][1]:
                    break
            connection.close()
            numbers = [int(i.split("_")[1]) for i, _ in seen]
            self.assertEqual(numbers, list(range(2, 2 + len(numbers))))  # the rest, in order, none twice
            self.assertGreaterEqual(len(seen), 2)  # at least one progress missed while away, then the answer
            self.assertEqual(seen[-1][1]["id"], 5)
            self.assertEqual(text_of(seen[-1][1]["result"]), "(no output)")
            self.assertFalse(seen[-1][1]["result"]["isError"])
            # The stream was delivered to its end: its id now opens an ordinary GET stream (nothing replayed).
            connection, response = self.open_stream(server, session, {"Last-Event-ID": "r1_3"}, method="GET")
            connection.close()

    def test_no_priming_event_for_older_clients(self):
        # A priming event (empty data) is a 2025-11-25 feature: older clients get the stream as before.
        with HttpServerProcess("echo", "{message}") as server:
            status, headers, _ = server.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
            session = headers["mcp-session-id"]
            server.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session=session)
            status, _, text = server.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "echo", "arguments": {"message": "hi"}}}, session=session)
            self.assertEqual(status, 200)
            self.assertTrue(text.startswith("id: r1_1\nevent: message\ndata: {"), text)
            self.assertEqual(text_of(server.messages(text)[0]["result"]), "hi\n")


class HttpUpstreamTests(ScratchDir):
    def setUp(self):
        super().setUp()
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
            self.env.pop(name, None)

    def aggregator(self, servers, env=None):
        path = os.path.join(self.dir, "agg.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": servers}, f)
        return McpProcess("serve", "--config", path, env=env or self.env)

    def test_a_closed_stream_is_resumed_with_last_event_id(self):
        # SEP-1699: the upstream closes a call's stream after its priming event; mcpstudio waits the `retry`
        # it asked for, resumes with a GET naming the last event id, and the answer arrives. A stream closed
        # with no id to resume is an error at once, not a wait for the tool timeout.
        polling = PollingHttpServer()
        self.addCleanup(polling.close)
        with self.aggregator({"poll": {"url": "http://127.0.0.1:%d/mcp" % polling.port, "toolTimeout": 60}}) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("poll__slow", {})), "resumed")
            self.assertEqual(len(polling.resumes), 1)
            self.assertRegex(polling.resumes[0], r"^stream-\d+$")
            started = time.monotonic()
            reply = server.request("tools/call", {"name": "poll__silent", "arguments": {}})
            self.assertLess(time.monotonic() - started, 10)
            failure = json.dumps(reply)
            self.assertIn("closed its event stream before it answered", failure)
            self.assertIn("no event id", failure)
            self.assertEqual(len(polling.resumes), 1)

    def test_a_paused_upstream_stream_pauses_the_clients(self):
        # SEP-1699 polling passes through: the upstream closes its stream of the call, so mcpstudio closes
        # its --http client's stream of it too (after the priming event); the client's GET with that event's
        # id gets the answer once mcpstudio has resumed the upstream's.
        polling = PollingHttpServer()
        self.addCleanup(polling.close)
        config = os.path.join(self.dir, "agg.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"poll": {"url": "http://127.0.0.1:%d/mcp" % polling.port, "toolTimeout": 60}}}, f)
        with HttpServerProcess("serve", "--config", config, env=self.env) as server:
            session = server.initialize_session()
            resume = HttpResumeTests.open_stream
            connection, response = resume(self, server, session, {}, {
                "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "poll__slow", "arguments": {}}})
            self.assertEqual(HttpResumeTests.next_event(response)["id"], "r1_0")
            self.assertEqual(response.read(), b"")  # closed, unanswered
            connection.close()
            connection, response = resume(self, server, session, {"Last-Event-ID": "r1_0"}, method="GET")
            answer = json.loads(HttpResumeTests.next_event(response)["data"])
            connection.close()
            self.assertEqual((answer["id"], text_of(answer["result"])), (3, "resumed"))
            self.assertEqual(len(polling.resumes), 1)
            # A client of an earlier version knows no event ids: its stream stays open until the answer.
            status, headers, _ = server.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "old", "version": "0"}}})
            older = headers["mcp-session-id"]
            server.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session=older)
            status, _, text = server.post({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
                "name": "poll__slow", "arguments": {}}}, session=older, headers={"MCP-Protocol-Version": "2025-06-18"})
            self.assertEqual(status, 200)
            self.assertEqual(text_of(server.messages(text)[-1]["result"]), "resumed")
            self.assertNotIn("retry:", text)  # no priming event: one stream, to its end

    def test_streamable_http_and_legacy_sse_upstreams(self):
        port = free_port()
        token_env = dict(os.environ, MCPSTUDIO_HTTP_TOKEN="up-token-1234")
        web = HttpServerProcess("echo", "{message}", env=token_env, bind="127.0.0.1:%d" % port)
        old = LegacySseServer()
        self.addCleanup(old.close)
        try:
            env = dict(self.env, UP_TOKEN="up-token-1234")
            servers = {"web": {"type": "http", "url": "http://127.0.0.1:%d/mcp" % port,
                               "headers": {"Authorization": "Bearer ${UP_TOKEN}"}},
                       "old": {"type": "sse", "url": "http://127.0.0.1:%d/sse" % old.port}}
            with self.aggregator(servers, env) as server:
                server.initialize()
                names = [t["name"] for t in server.request("tools/list")["result"]["tools"]]
                self.assertIn("web__echo", names)
                self.assertIn("old__shout", names)
                result = server.call("web__echo", {"message": "via http"}, meta={"progressToken": "w"})
                self.assertEqual(text_of(result), "via http\n")
                progress = [n["params"] for n in server.notifications_of("notifications/progress")]
                self.assertTrue(progress and all(p["progressToken"] == "w" for p in progress), progress)
                self.assertEqual(text_of(server.call("old__shout", {"text": "legacy"})), "LEGACY")
                listed = {s["id"]: s for s in server.call("mcpstudio__servers_list", {})["structuredContent"]["servers"]}
                self.assertEqual((listed["web"]["transport"], listed["web"]["protocol"]), ("http", "2025-11-25"))
                self.assertEqual((listed["old"]["transport"], listed["old"]["protocol"]), ("sse", "2024-11-05"))
                self.assertEqual(listed["web"]["headers"], {"Authorization": "***"})
                self.assertNotIn("up-token-1234", json.dumps(listed))
                # The upstream goes away: calls fail at once, naming it; it comes back: they reconnect.
                web.proc.terminate()
                web.proc.wait(WAIT)
                failed = server.call("web__echo", {"message": "gone"})
                self.assertTrue(failed["isError"])
                self.assertIn("server `web`", text_of(failed))
                web = HttpServerProcess("echo", "{message}", env=token_env, bind="127.0.0.1:%d" % port)
                self.assertTrue(wait_until(lambda: not server.call("web__echo", {"message": "back"}).get("isError"), 10))
                self.assertEqual(text_of(server.call("web__echo", {"message": "back"})), "back\n")
        finally:
            web.__exit__(None, None, None)

    def test_cancelling_a_call_to_an_http_upstream(self):
        sleeper = self.pid_sleeper()
        pids = os.path.join(self.dir, "pids")
        with HttpServerProcess("--name", "slow", PY, sleeper, "{out}") as web:
            servers = {"web": {"type": "http", "url": "http://127.0.0.1:%d/mcp" % web.port}}
            with self.aggregator(servers) as server:
                server.initialize()
                server.send({"jsonrpc": "2.0", "id": "c", "method": "tools/call",
                             "params": {"name": "web__slow", "arguments": {"out": pids}}})
                child, grandchild = self.read_pids(pids)
                server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "c"}})
                self.assertTrue(wait_until(lambda: not alive(child) and not alive(grandchild), 10))
                self.assertNotIn("c", server.responses)
                status = server.call("mcpstudio__servers_list", {})["structuredContent"]["servers"][0]
                self.assertEqual(status["status"], "running")  # one cancelled call leaves the server be

    def test_modern_only_upstream(self):
        # A 2026-07-28 server: addressed per request; its list changes and the updates of the resources the
        # client subscribed to are asked for with subscriptions/listen (opened again as subscriptions change).
        fake = self.script("fake_mcp.py", FAKE_SERVER, executable=False)
        listens = os.path.join(self.dir, "listens")
        levels = os.path.join(self.dir, "levels")
        args = [fake, "--name", "new", "--modern-only", "--listen-file", listens, "--more-tools", "burst",
                "--level-file", levels]
        with self.aggregator({"new": {"command": PY, "args": args}}) as server:
            server.initialize()
            server.request("logging/setLevel", {"level": "debug"})  # reaches it with each request instead
            self.assertEqual(text_of(server.call("new__echo", {"text": "x"})), "new: x")
            with open(levels) as f:
                self.assertEqual(f.read().split(), ["debug"])
            status = server.call("mcpstudio__servers_list", {})["structuredContent"]["servers"][0]
            self.assertEqual(status["protocol"], "2026-07-28")

            def listened():
                with open(listens) as f:
                    return [json.loads(line) for line in f]
            self.assertTrue(wait_until(lambda: os.path.exists(listens) and listened()))
            self.assertEqual(listened()[0], {"toolsListChanged": True, "resourcesListChanged": True})
            server.call("new__burst", {})  # a list change, heard on the listen stream
            self.assertTrue(wait_until(lambda: server.notifications_of("notifications/tools/list_changed")))
            self.assertEqual(server.request("resources/subscribe", {"uri": "fake://new/info"})["result"], {})
            self.assertTrue(wait_until(lambda: server.notifications_of("notifications/resources/updated")))
            self.assertEqual(server.notifications_of("notifications/resources/updated")[0]["params"]["uri"],
                             "fake://new/info")
            self.assertEqual(listened()[-1]["resourceSubscriptions"], ["fake://new/info"])
            server.request("resources/unsubscribe", {"uri": "fake://new/info"})
            self.assertTrue(wait_until(lambda: "resourceSubscriptions" not in listened()[-1]))

    @unittest.skipUnless(shutil.which("openssl"), "openssl is needed to make a test certificate")
    def test_tls_through_an_https_proxy(self):
        key, cert = os.path.join(self.dir, "key.pem"), os.path.join(self.dir, "cert.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                        "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
                       check=True, capture_output=True, timeout=60)
        old = LegacySseServer(cert=(cert, key))
        proxy = ConnectProxy()
        self.addCleanup(old.close)
        self.addCleanup(proxy.close)
        servers = {"tls": {"type": "sse", "url": "https://127.0.0.1:%d/sse" % old.port}}
        env = dict(self.env, SSL_CERT_FILE=cert, HTTPS_PROXY="http://127.0.0.1:%d" % proxy.port)
        with self.aggregator(servers, env) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("tls__shout", {"text": "secure"})), "SECURE")
        self.assertTrue(proxy.tunnels)  # it went through the proxy
        untrusted = dict(self.env)  # without the certificate, verification fails and says so
        with self.aggregator(servers, untrusted) as server:
            server.initialize()
            status = server.call("mcpstudio__servers_start", {"server_id": "tls"})
            self.assertTrue(status["isError"])
            self.assertIn("CERTIFICATE_VERIFY_FAILED", text_of(status))


@unittest.skipUnless(_sdk_available(), "the official MCP Python SDK is not installed (set MCPSTUDIO_SDK_PYTHON)")
class HttpInteropTests(ScratchDir):
    run_client = PythonSdkInteropTests.run_client

    def test_sdk_client_both_eras(self):
        with HttpServerProcess("echo", "{message}") as server:
            out = self.run_client("""
                import anyio, json, os
                import mcp
                from mcp import ClientSession
                try:
                    from mcp.client.streamable_http import streamable_http_client as connect
                except ImportError:
                    from mcp.client.streamable_http import streamablehttp_client as connect

                async def main():
                    url = os.environ["URL"]
                    async with mcp.Client(url) as client:  # auto mode: server/discover, then 2026-07-28
                        auto = await client.call_tool("echo", {"message": "auto"})
                        version = client.protocol_version
                    async with connect(url) as streams:  # ClientSession: initialize, a session
                        async with ClientSession(streams[0], streams[1]) as session:
                            init = await session.initialize()
                            legacy = await session.call_tool("echo", {"message": "legacy"})
                    print(json.dumps({"version": version, "auto": auto.content[0].text,
                                      "legacy_version": init.protocol_version, "legacy": legacy.content[0].text}))
                anyio.run(main)
                """, URL="http://127.0.0.1:%d/mcp" % server.port)
        self.assertEqual(out, {"version": "2026-07-28", "auto": "auto\n", "legacy_version": "2025-11-25",
                               "legacy": "legacy\n"})

    @unittest.skipUnless(INSPECTOR and os.path.exists(INSPECTOR), "the MCP Inspector CLI is not installed")
    def test_inspector(self):
        with HttpServerProcess("echo", "{message}") as server:
            url = "http://127.0.0.1:%d/mcp" % server.port
            for args, check in ((["--method", "tools/list"], lambda out: [t["name"] for t in out["tools"]] == ["echo"]),
                                (["--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=inspected"],
                                 lambda out: out["content"][0]["text"] == "inspected\n")):
                proc = subprocess.run([INSPECTOR, "--cli", url, "--transport", "http"] + args, capture_output=True,
                                      text=True, timeout=120, stdin=subprocess.DEVNULL)
                self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
                self.assertTrue(check(json.loads(proc.stdout)), proc.stdout)


CONFORMANCE = os.environ.get("MCPSTUDIO_CONFORMANCE", "")  # dist/index.js of npm @modelcontextprotocol/conformance
NODE22 = os.environ.get("MCPSTUDIO_NODE22", "")            # a Node >= 22 for it
# Checks that cannot apply to a server whose one tool is `echo`: they need the suite's own fixture
# tools (sampling, elicitation, logging probes) or prompts and resources the echo server does not have.
NOT_APPLICABLE = {
    "sep-2575-server-rejects-undeclared-capability": "needs the fixture tool test_missing_capability",
    "sep-2575-missing-capability-http-400": "needs the fixture tool test_missing_capability",
    "sep-2575-http-server-no-independent-requests-on-stream": "needs the fixture tool test_streaming_elicitation",
    "sep-2575-server-no-log-without-loglevel": "needs the fixture tool test_logging_tool",
    "sep-2549-prompts-list-caching-hints": "the echo server has no prompts (prompts/list is -32601)",
    "sep-2549-resources-list-caching-hints": "the echo server has no resources",
    "sep-2549-resources-templates-list-caching-hints": "the echo server has no resources",
}
SCENARIOS = [("2025-11-25", s) for s in ("server-initialize", "ping", "tools-list", "dns-rebinding-protection",
                                         "server-session-lifecycle", "server-sse-multiple-streams",
                                         "logging-set-level")] + \
            [("2026-07-28", s) for s in ("server-stateless", "caching", "http-header-validation", "tools-list",
                                         "dns-rebinding-protection", "server-sse-multiple-streams")]


@unittest.skipUnless(CONFORMANCE and os.path.exists(CONFORMANCE) and NODE22 and os.path.exists(NODE22),
                     "the MCP conformance suite is not installed (set MCPSTUDIO_CONFORMANCE and MCPSTUDIO_NODE22)")
class ConformanceTests(ScratchDir):
    def test_server_scenarios(self):
        with HttpServerProcess("echo", "{message # what to echo}") as server:
            url = "http://127.0.0.1:%d/mcp" % server.port
            for version, scenario in SCENARIOS:
                with self.subTest(scenario=scenario, version=version):
                    out = os.path.join(self.dir, "%s-%s" % (scenario, version))
                    proc = subprocess.run([NODE22, CONFORMANCE, "server", "--url", url, "--scenario", scenario,
                                           "--spec-version", version, "-o", out], capture_output=True, text=True,
                                          timeout=120, stdin=subprocess.DEVNULL)
                    found = [os.path.join(root, name) for root, _, names in os.walk(out)
                             for name in names if name == "checks.json"]
                    self.assertEqual(len(found), 1, proc.stdout[-2000:] + proc.stderr[-2000:])
                    with open(found[0]) as f:
                        checks = json.load(f)
                    failed = [c["id"] for c in checks if c["status"] == "FAILURE" and c["id"] not in NOT_APPLICABLE]
                    self.assertEqual(failed, [], proc.stdout[-3000:])
                    self.assertTrue([c for c in checks if c["status"] == "SUCCESS"])


CES = os.environ.get("MCPSTUDIO_CES", "")  # shared/peers/conformance-everything-server after `npm ci` (its node_modules)
# Every scenario that passes directly must pass through mcpstudio too.


@unittest.skipUnless(CONFORMANCE and os.path.exists(CONFORMANCE) and NODE22 and os.path.exists(NODE22)
                     and CES and os.path.isdir(os.path.join(CES, "node_modules")),
                     "needs the conformance suite and its reference server (MCPSTUDIO_CONFORMANCE, MCPSTUDIO_NODE22, "
                     "MCPSTUDIO_CES)")
class ConformanceThroughTests(ScratchDir):
    """Issue 18: the suite's server scenarios against its reference server, directly and through mcpstudio."""

    def results(self, url, version) -> dict:
        """scenario -> (passed, failed) of one run of every scenario `version` requires."""
        out = os.path.join(self.dir, "%s-%d" % (version, len(os.listdir(self.dir))))
        proc = subprocess.run([NODE22, CONFORMANCE, "server", "--url", url, "--requirements", version, "-o", out,
                               "--timeout", "10000"], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        found = {}
        for line in proc.stdout.splitlines():
            match = re.match(r"^[\u2713\u2717] (\S+): (\d+) passed, (\d+) failed", line)
            if match:
                found[match.group(1)] = (int(match.group(2)), int(match.group(3)))
        self.assertTrue(found, proc.stdout[-3000:] + proc.stderr[-3000:])
        return found

    def test_what_passes_directly_passes_through(self):
        port = free_port()
        reference = subprocess.Popen([os.path.join(CES, "node_modules", ".bin", "tsx"), "everything-server.ts"], cwd=CES,
                                     env=dict(os.environ, PORT=str(port)), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.addCleanup(lambda: (os.killpg(reference.pid, signal.SIGTERM), reference.wait(), reference.stdout.close()))
        self.assertTrue(wait_until(lambda: self.listening(port), 60), "the reference server did not start")
        config = os.path.join(self.dir, "agg.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"ref": {"url": "http://localhost:%d/mcp" % port, "prefix": ""}}}, f)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        report = []  # the tables, printed and (for .ci/run) written to $MCPSTUDIO_REPORT_DIR
        self.addCleanup(self.report, report)
        with HttpServerProcess("serve", "--config", config, env=env) as through:
            for version in ("2025-11-25", "2026-07-28"):
                direct = self.results("http://localhost:%d/mcp" % port, version)
                proxied = self.results("http://127.0.0.1:%d/mcp" % through.port, version)
                lost = []
                report.append("%s: %d scenarios pass directly, %d through mcpstudio (checks passed/run)" % (
                    version, sum(1 for p, f in direct.values() if not f), sum(1 for p, f in proxied.values() if not f)))
                for scenario in sorted(direct):
                    passed, failed = direct[scenario]
                    mine = proxied.get(scenario, (0, 1))
                    report.append("  %-55s direct %3d/%-3d through %3d/%-3d" % (
                        scenario, passed, passed + failed, mine[0], sum(mine)))
                    if not failed and mine[1]:
                        lost.append(scenario)
                with self.subTest(version=version):
                    self.assertEqual(lost, [], "scenarios that pass directly but fail through mcpstudio")

    @staticmethod
    def report(lines, name="conformance-through.txt"):
        text = "\n".join(lines) + "\n"
        sys.stdout.write("\n" + text)
        folder = os.environ.get("MCPSTUDIO_REPORT_DIR")
        if folder:
            with open(os.path.join(folder, name), "w") as f:
                f.write(text)

    @staticmethod
    def listening(port) -> bool:
        import socket
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return True
        except OSError:
            return False


def _pyte():
    """pyte, the terminal emulator the TUI tests read the screen with (test-only; $MCPSTUDIO_PYTE_PATH: a
    folder it was installed in, as .ci/run does for the Pythons that lack it)."""
    if os.environ.get("MCPSTUDIO_PYTE_PATH") and os.environ["MCPSTUDIO_PYTE_PATH"] not in sys.path:
        sys.path.append(os.environ["MCPSTUDIO_PYTE_PATH"])
    try:
        import pyte
        return pyte
    except ImportError:
        return None


PYTE = _pyte()


_XTERM_STREAM = []


def _xterm_screen():
    """pyte's Screen with xterm's SU and SD (CSI n S, CSI n T: scroll the margins), which pyte 0.8 lacks
    and ncurses uses to move rows; and the ByteStream that dispatches them (kept in _XTERM_STREAM)."""
    class Screen(PYTE.Screen):
        def _scroll(self, count, up):
            y, x = self.cursor.y, self.cursor.x
            top, bottom = (self.margins.top, self.margins.bottom) if self.margins else (0, self.lines - 1)
            self.cursor.y = bottom if up else top
            for _ in range(count or 1):
                self.index() if up else self.reverse_index()
            self.cursor.y, self.cursor.x = y, x

        def scroll_up(self, count=1, *args, **kwargs):
            self._scroll(count, True)

        def scroll_down(self, count=1, *args, **kwargs):
            self._scroll(count, False)

    class Stream(PYTE.ByteStream):
        csi = dict(PYTE.ByteStream.csi, S="scroll_up", T="scroll_down")
    _XTERM_STREAM[:] = [Stream]
    return Screen


class TuiSession:
    """`mcpstudio tui` in a pseudo-terminal, as a person sees it: its screen kept by pyte."""

    def __init__(self, *args, env=None, rows=24, cols=80, command=None):
        import pty
        self.screen = _xterm_screen()(cols, rows)
        self.stream = _XTERM_STREAM[0](self.screen)
        self.master, slave = pty.openpty()
        self.size(slave, rows, cols)
        self.lock = threading.Lock()
        def own_terminal():  # a session whose controlling terminal is the pty: Ctrl+C there is SIGINT, as for a person
            import fcntl
            import termios
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        self.proc = subprocess.Popen(command or SERVER + ["tui"] + list(args), stdin=slave, stdout=slave, stderr=slave,
                                     env=dict(env or os.environ, TERM="xterm"), preexec_fn=own_terminal)
        os.close(slave)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    @staticmethod
    def size(fd, rows, cols):
        import fcntl
        import struct
        import termios
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def _read(self):
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.stream.feed(data)

    def text(self) -> str:
        with self.lock:
            return "\n".join(line.rstrip() for line in self.screen.display)

    def wait_for(self, *fragments, timeout=WAIT) -> str:
        """The screen once it shows every fragment; fails the test with the screen if it never does."""
        if not wait_until(lambda: all(f in self.text() for f in fragments), timeout, 0.05):
            raise AssertionError("the screen never showed %r:\n%s" % (fragments, self.text()))
        return self.text()

    def row(self, name: str) -> str:
        return next((line for line in self.text().splitlines() if line.startswith(name + " ")), "")

    def press(self, keys: str):
        os.write(self.master, keys.encode())

    def resize(self, rows, cols):
        self.size(self.master, rows, cols)
        with self.lock:
            self.screen.resize(rows, cols)
        os.kill(self.proc.pid, signal.SIGWINCH)

    def color_of(self, text: str) -> str:
        """The foreground colour of the first cell of `text` on the screen."""
        with self.lock:
            for y, line in enumerate(self.screen.display):
                x = line.find(text)
                if x >= 0:
                    return self.screen.buffer[y][x].fg
        raise AssertionError("%r is not on the screen" % text)

    def colors(self) -> set:
        """The foreground colours of every character on the screen."""
        with self.lock:
            return {cell.fg for line in self.screen.buffer.values() for cell in line.values() if cell.data.strip()}

    def close(self, keys="q") -> int:
        if self.proc.poll() is None:
            self.press(keys)
        try:
            return self.proc.wait(20)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            os.close(self.master)


@unittest.skipUnless(PYTE is not None and hasattr(os, "openpty") and sys.platform != "win32",
                     "needs pyte (pip install pyte; .ci/run installs it) and a POSIX pseudo-terminal")
class TuiTests(AggregatorCase):
    """Issue 24: `mcpstudio tui` driven in a pseudo-terminal, its screen read as a person would."""

    def upstream(self, name, *args):
        return {"command": PY, "args": [self.fake, "--name", name, "--pidfile", self.pids] + list(args)}

    def config(self, servers) -> str:
        path = os.path.join(self.dir, "servers.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": servers}, f)
        return path

    def read(self, path) -> dict:
        with open(path) as f:
            return json.load(f)

    def tui(self, path, **keys):
        session = TuiSession("--config", path, env=self.env, **keys)
        self.addCleanup(lambda: session.proc.poll() is None and session.close())
        return session

    def pid_of(self, name):
        with open(self.pids) as f:
            return [int(line.split()[0]) for line in f if line.split()[2:] == [name]][-1]

    def all_gone(self):
        pids = []
        if os.path.exists(self.pids):
            with open(self.pids) as f:
                pids = [int(p) for line in f for p in line.split()[:2]]
        return wait_until(lambda: not any(alive(p) for p in pids), 10)

    def test_test_details_call_log_and_quit(self):
        good = dict(self.upstream("good"), env={"API_TOKEN": "s3cret-value"})
        path = self.config({"good": good, "broken": self.upstream("broken", "--crash-at-start"),
                            "slow": self.upstream("slow", "--slow-start", "4")})
        tui = self.tui(path)
        tui.wait_for("SERVER", "good", "broken", "slow", "t:test")
        self.assertRegex(tui.row("good"), r"^good\s+command yes stopped\s+-")
        tui.press("t")
        tui.wait_for("good is running: 5 tools")
        self.assertRegex(tui.row("good"), r"^good\s+command yes running\s+5")
        tui.press("\r")
        tui.wait_for("tools (5):", "echo", "Echo text back", "command: %s" % PY, "env: API_TOKEN=***")
        self.assertNotIn("s3cret", tui.text())
        tui.press("c")
        tui.wait_for("text (string")
        tui.press("hi th\x7fhere, caf\u00e9\r")  # a backspace, and a character beyond ASCII
        tui.wait_for("result of echo:", "good: hi there, caf\u00e9")
        tui.press("\x1bl")
        tui.wait_for("log of good", "(following)", "mcpstudio: running: good")
        tui.press("f")
        self.assertTrue(wait_until(lambda: "(following)" not in tui.text()))
        tui.press("\x1bjt")  # broken: it fails at start, and says why
        tui.wait_for("server `broken` failed to start: fake: cannot start")
        self.assertRegex(tui.row("broken"), r"^broken\s+command yes failed .* fake: cannot star")
        tui.press("\r")
        tui.wait_for("last error:", "missing API key")
        tui.press("\x1bjt")  # slow: the screen stays live while it starts
        tui.wait_for("starting slow")
        self.assertTrue(wait_until(lambda: "starting" in tui.row("slow")), tui.text())
        tui.press("?")
        tui.wait_for("this help", "quit; stops every server the TUI started", timeout=2)  # answered within 2 s
        tui.press("\x1b")
        tui.wait_for("slow is running: 5 tools")
        self.assertEqual(tui.color_of("running"), "green")  # good's row, not selected
        tui.press("/sl\r")  # the filter leaves one row
        self.assertTrue(wait_until(lambda: tui.row("slow") and not tui.row("good")), tui.text())
        tui.press("t")  # t again stops it
        tui.wait_for("stopping slow")
        self.assertTrue(wait_until(lambda: "stopped" in tui.row("slow")), tui.text())
        slow_pid = self.pid_of("slow")
        self.assertTrue(wait_until(lambda: not alive(slow_pid)))
        self.assertEqual(tui.close(), 0)
        self.assertTrue(self.all_gone(), "a server the TUI started outlived it")

    def test_edits_go_through_the_config(self):
        target = self.config({"good": self.upstream("good"), "other": self.upstream("other")})
        path = os.path.join(self.dir, "link.json")  # edits write through a symlinked config
        os.symlink(target, path)
        tui = self.tui(path)
        tui.wait_for("good", "other")
        tui.press("e")
        tui.wait_for("disabled good")
        self.assertTrue(self.read(target)["mcpServers"]["good"]["disabled"])
        self.assertTrue(os.path.exists(path + ".bak"))  # the edit kept the file before it
        self.assertRegex(tui.row("good"), r"^good\s+command no\s+disabled")
        tui.press("e")
        tui.wait_for("enabled good")
        self.assertNotIn("disabled", self.read(target)["mcpServers"]["good"])
        tui.press("a" + "other\r")  # a duplicate name is refused in the form, with the reason
        tui.wait_for("refused: a server other exists")
        tui.press("a" + "extra\r" + "%s -c pass\r" % PY)
        tui.wait_for("added extra")
        self.assertEqual(self.read(target)["mcpServers"]["extra"], {"command": PY, "args": ["-c", "pass"]})
        tui.press("jjd" + "y\r")
        tui.wait_for("removed extra")
        self.assertNotIn("extra", self.read(target)["mcpServers"])
        tui.press("kk" + "n" + "c\r" + "work\r")
        tui.wait_for("added namespace work")
        tui.press("j" + "n" + "a\r" + "work\r")  # other joins it
        tui.wait_for("namespace work: good, other")
        tui.press("k")
        tui.press("n" + "d\r" + "work\r")
        tui.wait_for("default namespace: work", "namespace: work")
        self.assertEqual((self.read(target)["namespaces"], self.read(target)["defaultNamespace"]),
                         ({"work": {"servers": ["good", "other"]}}, "work"))
        tui.press("t")
        tui.wait_for("good is running")
        tui.press("\r")
        tui.wait_for("tools (5):")
        self.assertRegex(tui.text(), r"echo\s+allowed\s+work:\+")
        tui.press("p")
        tui.wait_for("denied tool echo of good")
        self.assertRegex(tui.text(), r"echo\s+denied\s+work:-")
        self.assertEqual(self.read(target)["toolPermissions"],
                         [{"namespace": "work", "server": "good", "toolName": "echo", "enabled": False}])
        self.assertTrue(os.path.islink(path))
        self.assertEqual(tui.close("\x03"), 0)  # Ctrl+C quits cleanly too
        self.assertTrue(self.all_gone())

    def test_it_fits_and_follows_a_resize_and_honours_no_color(self):
        path = self.config({"good": self.upstream("good"), "other": self.upstream("other")})
        tui = self.tui(path, rows=30, cols=120)
        tui.wait_for("good")
        tui.press("jt")
        tui.press("k")  # its row unselected: the state in colour
        tui.wait_for("other is running")
        self.assertTrue(wait_until(lambda: tui.color_of("running") == "green"))
        tui.resize(24, 80)
        self.assertTrue(wait_until(lambda: tui.text().splitlines()[-1].startswith("t:test Enter:details")
                                   and "other" in tui.row("other")), tui.text())
        self.assertTrue(all(len(line) <= 80 for line in tui.text().splitlines()))
        self.assertEqual(tui.close(), 0)
        tui = TuiSession("--config", path, env=dict(self.env, NO_COLOR="1"))
        self.addCleanup(lambda: tui.proc.poll() is None and tui.close())
        tui.wait_for("good")
        tui.press("jt")
        tui.wait_for("other is running")
        tui.press("k")
        time.sleep(0.5)
        self.assertEqual(tui.colors(), {"default"})
        self.assertEqual(tui.close(), 0)
        self.assertTrue(self.all_gone())

    def test_header_counts_the_namespaces_tools_against_client_caps(self):
        path = os.path.join(self.dir, "servers.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {"good": self.upstream("good"), "big": self.upstream("big", "--tools", "45"),
                                      "outside": self.upstream("outside")},
                       "namespaces": {"work": {"servers": ["good", "big"]}}, "defaultNamespace": "work"}, f)
        tui = self.tui(path)
        tui.wait_for("namespace: work  0 tools, under Cursor's 40")
        tui.press("t")
        tui.wait_for("good is running", "work  5 tools, under Cursor's 40")
        tui.press("jjt")  # outside is not in the namespace: its tools do not count
        tui.wait_for("outside is running")
        tui.press("kt")
        tui.wait_for("big is running", "55 tools, over Cursor 40, Windsurf 50  ")
        self.assertEqual(tui.close(), 0)


@unittest.skipUnless(PYTE is not None and hasattr(os, "openpty") and sys.platform != "win32",
                     "needs pyte and a POSIX pseudo-terminal")
class TuiWithoutCursesTests(ScratchDir):
    def test_without_curses_it_says_what_to_use(self):
        # As on Windows without windows-curses: a terminal, but no curses module.
        path = os.path.join(self.dir, "servers.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {}}, f)
        tui = TuiSession(cols=200, command=[PY, "-c", "import sys; sys.modules['curses'] = None; sys.path.insert(0, %r); "
                                            "import mcpstudio; sys.exit(mcpstudio.main(['tui', '--config', %r]))"
                                  % (HERE, path)])
        self.assertEqual(tui.proc.wait(30), 2)
        tui.wait_for("tui needs Python's curses module (on Windows: pip install windows-curses)",
                     "mcpstudio status")
        tui.close()


class TuiWithoutTerminalTests(ScratchDir):
    """Issue 24: what `tui` does where it cannot run, and that serving never loads curses."""

    def test_without_a_terminal_it_says_what_to_use(self):
        proc = subprocess.run(SERVER + ["tui", "--config", os.path.join(self.dir, "none.json")], capture_output=True,
                              text=True, timeout=30, stdin=subprocess.DEVNULL)
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(proc.stdout, "")
        self.assertEqual(proc.stderr.count("\n"), 1)
        self.assertIn("tui needs a terminal", proc.stderr)
        self.assertIn("mcpstudio status", proc.stderr)

    def test_serving_never_imports_curses(self):
        proc = subprocess.run([PY, "-X", "importtime", os.path.join(HERE, "mcpstudio.py"), "echo", "{message}"],
                              capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        self.assertRegex(proc.stderr, r"(?m)^import time: .*\| +json$")  # importtime ran, and lists every import
        self.assertNotIn("curses", proc.stderr)


class OAuthServer(ThreadedHttpServer):
    """A protected MCP server and its authorization server at one origin, in threads of this test process.

    /mcp wants a Bearer token (401 with resource_metadata and scope otherwise); the authorization server
    registers clients, redirects /authorize at once with code, state and iss, checks PKCE at /token and
    grants refresh tokens. `expires_in` sets the tokens' life; `grants` and `registered` record what came.
    Issue 31: `resource_metadata` and `issuers` change what the challenge and the resource metadata name,
    `token_reply` (status, body, headers) replaces the token endpoint's answer, `revocation` offers RFC 7009
    revocation (`revoked` holds the tokens revoked); `seen` holds (method, path, headers) of every request."""

    def __init__(self, expires_in=3600):
        import base64
        import hashlib
        import http.server
        import urllib.parse
        owner, codes, tokens = self, {}, {}
        self.expires_in, self.grants, self.registered, self.authorized = expires_in, [], [], []
        self.resource_metadata = self.issuers = self.token_reply = None
        self.revocation, self.revoked, self.seen = True, [], []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, status, body=None, headers=()):
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                for key, value in headers:
                    self.send_header(key, value)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                base = "http://127.0.0.1:%d" % owner.port
                owner.seen.append(("GET", self.path, dict(self.headers)))
                parts = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(parts.query))
                if parts.path == "/.well-known/oauth-protected-resource/mcp":
                    self.reply(200, {"resource": base + "/mcp", "authorization_servers": owner.issuers or [base],
                                     "scopes_supported": ["files:read"]})
                elif parts.path == "/.well-known/oauth-authorization-server":
                    self.reply(200, {"issuer": base, "authorization_endpoint": base + "/authorize",
                                     "token_endpoint": base + "/token", "registration_endpoint": base + "/register",
                                     "code_challenge_methods_supported": ["S256"], "response_types_supported": ["code"],
                                     "grant_types_supported": ["authorization_code", "refresh_token"],
                                     "token_endpoint_auth_methods_supported": ["none"],
                                     "authorization_response_iss_parameter_supported": True,
                                     **({"revocation_endpoint": base + "/revoke"} if owner.revocation else {})})
                elif parts.path == "/authorize":
                    owner.authorized.append(query)
                    code = "code-%d" % len(owner.authorized)
                    codes[code] = query.get("code_challenge")
                    location = query["redirect_uri"] + "?" + urllib.parse.urlencode(
                        {"code": code, "state": query.get("state", ""), "iss": base})
                    self.reply(302, headers=[("Location", location)])
                else:
                    self.reply(405 if parts.path == "/mcp" else 404)

            def do_POST(self):
                base = "http://127.0.0.1:%d" % owner.port
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                owner.seen.append(("POST", self.path, dict(self.headers)))
                if self.path == "/token" and owner.token_reply:
                    self.reply(*owner.token_reply)
                elif self.path == "/revoke":
                    owner.revoked.append(dict(urllib.parse.parse_qsl(raw.decode()))["token"])
                    self.reply(200)
                elif self.path == "/register":
                    owner.registered.append(json.loads(raw))
                    self.reply(201, dict(json.loads(raw), client_id="client-%d" % len(owner.registered)))
                elif self.path == "/token":
                    form = dict(urllib.parse.parse_qsl(raw.decode()))
                    owner.grants.append(form["grant_type"])
                    if form["grant_type"] == "authorization_code":
                        digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
                        if codes.pop(form.get("code"), None) != base64.urlsafe_b64encode(digest).decode().rstrip("="):
                            self.reply(400, {"error": "invalid_grant"})
                            return
                    elif tokens.get(form.get("refresh_token"), (None, 0))[0] != "refresh":
                        self.reply(400, {"error": "invalid_grant"})
                        return
                    serial = len(owner.grants)
                    tokens["at-%d" % serial] = ("access", time.time() + owner.expires_in)
                    tokens["rt-%d" % serial] = ("refresh", 0)
                    self.reply(200, {"access_token": "at-%d" % serial, "refresh_token": "rt-%d" % serial,
                                     "token_type": "Bearer", "expires_in": owner.expires_in, "scope": "files:read"})
                elif self.path == "/mcp":
                    token = (self.headers.get("Authorization") or "")[len("Bearer "):]
                    kind, until = tokens.get(token, (None, 0))
                    if kind != "access" or until < time.time():
                        self.reply(401, {"error": "invalid_token"}, [("WWW-Authenticate", 'Bearer resource_metadata="%s", '
                                   'scope="files:read"' % (owner.resource_metadata or
                                                           base + "/.well-known/oauth-protected-resource/mcp"))])
                        return
                    message = json.loads(raw)
                    if "id" not in message:
                        self.reply(202)
                        return
                    method = message["method"]
                    if method == "initialize":
                        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                  "serverInfo": {"name": "files", "version": "1"}}
                    elif method == "tools/list":
                        result = {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]}
                    elif method == "tools/call":
                        result = {"content": [{"type": "text", "text": "signed-in caller (token %s)" % token.split("-")[0]}]}
                    else:
                        self.reply(200, {"jsonrpc": "2.0", "id": message["id"],
                                         "error": {"code": -32601, "message": "no " + method}})
                        return
                    self.reply(200, {"jsonrpc": "2.0", "id": message["id"], "result": result},
                               [("Mcp-Session-Id", "s1")] if method == "initialize" else [])
                else:
                    self.reply(404)

        self.serve(Handler)
        self.url = "http://127.0.0.1:%d/mcp" % self.port


class OAuthCase(ScratchDir):
    """An OAuthServer, a config naming it as `files`, and the CLI run as a user would, its browser the test's."""

    def setUp(self):
        super().setUp()
        self.server = OAuthServer()
        self.addCleanup(self.server.close)
        self.env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(self.dir, "config"),
                        XDG_CACHE_HOME=os.path.join(self.dir, "cache"),
                        BROWSER="%s %s --test-browser %%s" % (PY, os.path.abspath(__file__)))
        self.config = os.path.join(self.dir, "servers.json")
        with open(self.config, "w") as f:
            json.dump({"mcpServers": {"files": {"url": self.server.url}}}, f)

    def run_cli(self, *words):
        return subprocess.run(SERVER + list(words), env=self.env, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)

    def token_files(self):
        folder = os.path.join(self.dir, "config", "mcpstudio", "oauth")
        return [os.path.join(folder, name) for name in os.listdir(folder)] if os.path.isdir(folder) else []


class OAuthTests(OAuthCase):
    """Issue 19: sign-in to a protected URL server (login, logout, status, serve, refresh), end to end."""

    def test_login_status_serve_logout(self):
        login = self.run_cli("login", "files", "--config", self.config)
        self.assertEqual(login.returncode, 0, login.stderr)
        self.assertIn("signed in to files: signed in (expires in", login.stdout)
        self.assertEqual(self.server.grants, ["authorization_code"])
        query = self.server.authorized[0]
        self.assertEqual((query["code_challenge_method"], query["resource"], query["scope"]),
                         ("S256", self.server.url, "files:read"))
        self.assertEqual(self.server.registered[0]["application_type"], "native")
        [path] = self.token_files()
        if os.name == "posix":
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
            self.assertEqual(os.stat(os.path.dirname(path)).st_mode & 0o777, 0o700)
        with open(path) as f:
            kept = json.load(f)
        self.assertEqual(kept["tokens"]["access_token"], "at-1")
        status = self.run_cli("status", "--config", self.config)
        self.assertRegex(status.stdout, r"files\s+signed in \(expires in \d+ min, refreshable; scopes: files:read\)")
        for run in (login, status):
            self.assertNotIn("at-1", run.stdout + run.stderr)  # never printed
            self.assertNotIn("rt-1", run.stdout + run.stderr)
        with McpProcess("serve", "--config", self.config, env=self.env) as server:  # no terminal, no browser: the kept token
            server.initialize()
            self.assertEqual(text_of(server.call("files__whoami", {})), "signed-in caller (token at)")
            self.assertNotIn("at-1", "".join(server.stderr))
        self.assertEqual(len(self.server.authorized), 1, "serve signed in again")
        logout = self.run_cli("logout", "files", "--config", self.config)
        self.assertEqual(logout.returncode, 0, logout.stderr)
        self.assertIn("signed out of files", logout.stdout)
        self.assertEqual(self.token_files(), [])
        self.assertIn("files  not signed in", self.run_cli("status", "--config", self.config).stdout)

    def test_serve_without_a_sign_in_says_which_command_signs_in(self):
        with McpProcess("serve", "--config", self.config, env=self.env) as server:
            server.initialize()
            started = time.monotonic()
            reply = server.request("tools/call", {"name": "files__whoami", "arguments": {}})
            self.assertLess(time.monotonic() - started, 10)  # at once, not after the startup timeout
            self.assertIn("needs a sign-in: run `mcpstudio login files --config %s`" % self.config,
                          reply["error"]["message"])
            self.assertEqual(self.server.authorized, [], "serve opened the browser without being allowed to")
            self.assertEqual(self.run_cli("login", "files", "--config", self.config).returncode, 0)
            self.assertEqual(text_of(server.call("files__whoami", {})), "signed-in caller (token at)")  # no restart

    def test_a_token_about_to_expire_is_refreshed(self):
        self.server.expires_in = 30  # inside OAUTH_REFRESH_EARLY: every use refreshes first
        self.assertEqual(self.run_cli("login", "files", "--config", self.config).returncode, 0)
        called = self.run_cli("call", "files__whoami", "serve", "--config", self.config)
        self.assertEqual(called.returncode, 0, called.stderr)
        self.assertEqual(called.stdout.strip(), "signed-in caller (token at)")
        self.assertIn("refresh_token", self.server.grants)
        self.assertEqual(len(self.server.authorized), 1, "a refresh needs no browser")

    def test_call_url_signs_in_with_the_browser(self):
        called = self.run_cli("call", "whoami", "--url", self.server.url)
        self.assertEqual(called.returncode, 0, called.stderr)
        self.assertEqual(called.stdout.strip(), "signed-in caller (token at)")
        self.assertIn("sign in with your browser; if none opens, visit http://127.0.0.1:%d/authorize?"
                      % self.server.port, called.stderr)
        self.assertEqual(len(self.token_files()), 1)
        again = self.run_cli("inspect", "--url", self.server.url)  # the kept token: no second sign-in
        self.assertIn("whoami", again.stdout)
        self.assertEqual(len(self.server.authorized), 1)


class OAuthPartsTests(unittest.TestCase):
    """Issue 19: the pure parts of the sign-in, table-driven."""

    def test_www_authenticate(self):
        for header, expected in (
                ('Bearer resource_metadata="https://a/.well-known/x", scope="a b"',
                 {"resource_metadata": "https://a/.well-known/x", "scope": "a b"}),
                ('Bearer error="insufficient_scope", scope="files:write", error_description="needs \\"write\\""',
                 {"error": "insufficient_scope", "scope": "files:write", "error_description": 'needs "write"'}),
                ('Basic realm="x", Bearer scope=read', {"scope": "read"}),
                ("bearer", {}),
                ('Basic realm="x"', {}),
                ("", {})):
            with self.subTest(header=header):
                self.assertEqual(mcpstudio.www_authenticate(header), expected)

    def test_discovery_urls(self):
        self.assertEqual(mcpstudio.protected_resource_urls("https://h.example/public/mcp", "https://h.example/prm"), [
            "https://h.example/prm", "https://h.example/.well-known/oauth-protected-resource/public/mcp",
            "https://h.example/.well-known/oauth-protected-resource"])
        self.assertEqual(mcpstudio.protected_resource_urls("https://H.example"),
                         ["https://h.example/.well-known/oauth-protected-resource"])
        self.assertEqual(mcpstudio.authorization_server_urls("https://auth.example/tenant1"), [
            "https://auth.example/.well-known/oauth-authorization-server/tenant1",
            "https://auth.example/.well-known/openid-configuration/tenant1",
            "https://auth.example/tenant1/.well-known/openid-configuration"])
        self.assertEqual(mcpstudio.authorization_server_urls("https://auth.example/"), [
            "https://auth.example/.well-known/oauth-authorization-server",
            "https://auth.example/.well-known/openid-configuration"])

    def test_resource_covers(self):
        for resource, server, expected in (
                ("https://h.example/mcp", "https://h.example/mcp", True),
                ("https://h.example", "https://h.example/mcp", True),
                ("https://h.example/", "https://h.example/mcp", True),
                ("https://h.example/mcp", "https://h.example/mcp2", False),
                ("https://h.example/other", "https://h.example/mcp", False),
                ("https://evil.example/mcp", "https://h.example/mcp", False),
                ("http://h.example/mcp", "https://h.example/mcp", False)):
            with self.subTest(resource=resource, server=server):
                self.assertEqual(mcpstudio.resource_covers(resource, server), expected)

    def test_loopback_and_endpoints(self):
        for url, expected in (("http://localhost:8/cb", True), ("http://127.0.0.1/", True), ("http://127.1.2.3", True),
                              ("http://[::1]:9/", True), ("http://App.localhost/", True), ("https://example.com/", True),
                              ("http://example.com/", False), ("http://127.0.0.1.evil.com/", False),
                              ("http://127.999.0.1/", False), ("http://127.1/", False), ("http:///x", False),
                              ("ftp://localhost/", False)):
            with self.subTest(url=url):
                self.assertEqual(mcpstudio.secure_url(url), expected)
        client = mcpstudio.OAuthClient("https://h.example/mcp", store=mcpstudio.TokenStore("x", tempfile.gettempdir()))
        self.assertEqual(client._check_endpoint({"token_endpoint": "http://localhost:9/token"}, "token_endpoint"),
                         "http://localhost:9/token")
        with self.assertRaisesRegex(mcpstudio.OAuthError, "not https"):
            client._check_endpoint({"issuer": "x", "token_endpoint": "http://auth.example/token"}, "token_endpoint")

    def test_pkce_pair(self):
        import base64
        import hashlib
        verifier, challenge = mcpstudio.pkce_pair()
        self.assertRegex(verifier, r"^[A-Za-z0-9_-]{43,128}$")  # RFC 7636 §4.1
        self.assertEqual(challenge, base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("="))
        self.assertNotEqual(mcpstudio.pkce_pair()[0], verifier)

    def test_elicitation_answer(self):
        schema = {"type": "object", "required": ["ok", "env"], "properties": {
            "ok": {"type": "boolean"}, "env": {"type": "string", "enum": ["dev", "prod"], "default": "dev"},
            "count": {"type": "integer"}, "note": {"type": "string"}}}
        form = {"message": "Deploy?", "requestedSchema": schema}
        for assume_yes, typed, expected in (
                (True, [], {"action": "accept", "content": {"ok": True, "env": "dev"}}),
                (False, ["y", "", "3", "hello"], {"action": "accept", "content": {"ok": True, "env": "dev", "count": 3,
                                                                                 "note": "hello"}}),
                (False, ["no", "prod", "x", ""], {"action": "accept", "content": {"ok": False, "env": "prod",
                                                                                  "count": "x"}}),
                (False, EOFError, {"action": "cancel"})):
            answers = iter(typed if isinstance(typed, list) else ())

            def ask(prompt, answers=answers, typed=typed):
                if typed is EOFError:
                    raise EOFError
                return next(answers)
            with self.subTest(assume_yes=assume_yes, typed=typed), contextlib.redirect_stderr(io.StringIO()) as said:
                self.assertEqual(mcpstudio.elicitation_answer(form, assume_yes, ask), expected)
                self.assertEqual(said.getvalue(), "mcpstudio: the server asks: Deploy?\n")
        with contextlib.redirect_stderr(io.StringIO()) as said:
            self.assertEqual(mcpstudio.elicitation_answer({"mode": "url", "url": "https://x"}, True), {"action": "decline"})
        self.assertIn("asks you to open https://x; declined", said.getvalue())

    def test_encode_header(self):
        for value, expected in (("us-west1", "us-west1"), ("us west 1", "us west 1"), (" padded", "=?base64?IHBhZGRlZA==?="),
                                ("Hello, \u4e16\u754c", "=?base64?SGVsbG8sIOS4lueVjA==?="), ("a\nb", "=?base64?YQpi?="),
                                ("=?base64?x?=", "=?base64?PT9iYXNlNjQ/eD89?=")):
            with self.subTest(value=value):
                self.assertEqual(mcpstudio._encode_header(value), expected)

    def test_oauth_config_block(self):
        folder = tempfile.mkdtemp(prefix="mcpstudio-test-")
        self.addCleanup(shutil.rmtree, folder, True)

        def read(entry):
            path = os.path.join(folder, "c.json")
            with open(path, "w") as f:
                json.dump({"mcpServers": {"s": entry}}, f)
            log = mcpstudio.Log()
            _, info = mcpstudio.ConfigLoader(path).load(mcpstudio.ProcessRunner(log), log, mcpstudio.RunSettings())
            return info["upstream"].specs[0]
        spec = read({"url": "https://h.example/mcp", "oauth": {"clientId": "id", "clientSecret": "s3cret",
                                                               "scopes": ["a", "b"], "callbackPort": 8765}})
        self.assertEqual(spec.oauth, {"clientId": "id", "clientSecret": "s3cret", "scopes": ["a", "b"], "callbackPort": 8765})
        self.assertIn("s3cret", spec.secrets)  # masked in logs
        self.assertIsNone(read({"url": "https://h.example/mcp", "oauth": False}).oauth)
        self.assertEqual(read({"url": "https://h.example/mcp", "oauth_client_id": "legacy"}).oauth, {"clientId": "legacy"})
        self.assertTrue(read({"command": "true", "oauth": {}}).notes)  # said, not used: a stdio server
        self.assertRegex(read({"url": "https://h.example/mcp", "oauth": {"clientID": "x"}}).error,
                         r"mcpServers.s.oauth.clientID: unknown key \(did you mean `clientId`\?\)")
        self.assertEqual(read({"url": "https://h.example/mcp", "protocolVersion": "2026-07-28"}).protocol, "2026-07-28")
        self.assertRegex(read({"url": "https://h.example/mcp", "protocolVersion": "2027-01-01"}).error,
                         r"protocolVersion: expected one of 2026-07-28, 2025-11-25, .* not \"2027-01-01\"")
        usage = subprocess.run(SERVER + ["--protocol-version", "2026-07-28", "echo", "{x}"], capture_output=True,
                               text=True, timeout=30, stdin=subprocess.DEVNULL)
        self.assertEqual(usage.returncode, 2)
        self.assertIn("--protocol-version goes with --url", usage.stderr)


@unittest.skipUnless(NODE22 and CONFORMANCE and os.environ.get("MCPSTUDIO_CONFORMANCE_CLIENTS"),
                     "needs the conformance suite (MCPSTUDIO_CONFORMANCE, MCPSTUDIO_NODE22) and "
                     "MCPSTUDIO_CONFORMANCE_CLIENTS=1 (3 minutes; .ci/run sets it in one suite)")
class ConformanceClientTests(ScratchDir):
    """Issue 19: the suite's client scenarios with mcpstudio as the client (this file's conformance_client adapter).

    Every scenario a revision requires must pass but those KNOWN lists with the reason; the extension
    scenarios (client credentials, DPoP, enterprise-managed and workload identity) are run and reported."""

    KNOWN = {}  # (version, scenario) -> why it is not expected to pass

    def scenarios(self, version: str) -> tuple:
        """(required client scenarios, extension client scenarios) of `version`."""
        out = subprocess.run([NODE22, CONFORMANCE, "list", "--client", "--requirements", version],
                             capture_output=True, text=True, timeout=60).stdout
        required, extension, part = [], [], None
        for line in out.splitlines():
            if line.startswith("Client scenarios"):
                part = required
            elif line.strip().startswith("extension"):
                part = extension
            elif not line.startswith("  ") or line.strip().startswith(("added-after", "pending")):
                part = None if line.strip() else part
            if part is not None and re.match(r"^\s+- (\S+)(?: \[client\])?$", line):
                part.append(re.match(r"^\s+- (\S+)", line).group(1))
        return required, extension

    def run_scenario(self, version: str, scenario: str) -> tuple:
        """(passed, failed, first failures) of one scenario, mcpstudio the client."""
        out = os.path.join(self.dir, "%s-%s" % (version, scenario.replace("/", "_")))
        command = "%s %s --conformance-client" % (sys.executable, os.path.join(self.dir, "adapter.py"))
        proc = subprocess.Popen([NODE22, CONFORMANCE, "client", "--command", command, "--scenario", scenario,
                                 "--spec-version", version, "-o", out, "--timeout", "60000"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                text=True, errors="replace", start_new_session=True)
        try:
            text = proc.communicate(timeout=180)[0]  # where it prints depends on its version
        except subprocess.TimeoutExpired:  # a loaded machine: a failure to run again alone, and nothing left running
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return 0, 1, ["the scenario ran past 180 s"]
        match = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", text)
        if not match:
            return 0, 1, [text[-1000:]]
        failures = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in text.splitlines() if "FAILURE" in line][:3]
        if int(match.group(3)):  # what mcpstudio said (the scenario keeps the client's stderr)
            for folder, _, files in os.walk(out):
                if "stderr.txt" in files:
                    with open(os.path.join(folder, "stderr.txt"), errors="replace") as f:
                        failures += [line.rstrip() for line in f if line.startswith("mcpstudio")][-5:]
        return int(match.group(1)), int(match.group(3)), failures

    def test_client_scenarios_2025_11_25(self):
        self.check_client_scenarios("2025-11-25")

    def test_client_scenarios_2026_07_28(self):  # (a test each: two CI shards take one each)
        self.check_client_scenarios("2026-07-28")

    def check_client_scenarios(self, version):
        import concurrent.futures
        report, unexpected = [], []
        self.addCleanup(ConformanceThroughTests.report, report, "conformance-client-%s.txt" % version)
        required, extension = self.scenarios(version)
        self.script("adapter.py", ADAPTER, executable=False)  # once: not rewritten while another scenario reads it
        self.assertGreater(len(required), 10, "the suite listed no client scenarios for %s" % version)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:  # two at a time: each starts 3 Pythons
            results = dict(zip(required + extension, pool.map(self.run_scenario, [version] * len(required + extension),
                                                              required + extension)))
        for scenario in [s for s in required if results[s][1]]:  # once more, alone: a loaded machine's timeout
            again = self.run_scenario(version, scenario)
            report.append("%s: %s failed (%s), then %s alone" % (
                version, scenario, results[scenario][2][:1], "passed" if not again[1] else "failed again"))
            results[scenario] = again
        passing = sum(1 for s in required if not results[s][1])
        report.append("%s: %d of %d required client scenarios pass with mcpstudio as the client"
                      % (version, passing, len(required)))
        for scenario in required + extension:
            passed, failed, failures = results[scenario]
            report.append("  %-45s %3d/%-3d %s" % (scenario, passed, passed + failed,
                                                   "(extension)" if scenario in extension else ""))
            if failed and scenario in required and (version, scenario) not in self.KNOWN:
                unexpected.append("%s %s: %s" % (version, scenario, failures))
        self.assertEqual(unexpected, [], "required client scenarios that failed")


# --------------------------------------------------------------------------
# Reliability (issue 11): protocol fuzzing, faults, load
# --------------------------------------------------------------------------
# Seeded and deterministic: MCPSTUDIO_FUZZ_SEED=N replays a run; every failure message
# names its seed. The long load figures come from `python3 benchmarks/reliability.py`.

FUZZ_SEED = int(os.environ.get("MCPSTUDIO_FUZZ_SEED") or 11)
_DEEP = "\x00deep\x00"      # a placeholder the fuzzer swaps for raw, deeply nested JSON text
_BAD_UTF8 = "\x00utf8\x00"  # a placeholder swapped for bytes that are not UTF-8


class MaskSecretsTests(unittest.TestCase):
    """Issue 31 (13, 16): the one masking of what people paste and models read (status, TUI, manager tools)."""

    def test_table(self):
        cases = [  # text -> as shown
            ("npx srv --api-key sk-123 --port 80", "npx srv --api-key *** --port 80"),
            ("srv --token=abc x", "srv --token=*** x"),
            ("API_KEY=zz run", "API_KEY=*** run"),
            ("srv --api-key 'a b' --verbose", "srv --api-key *** --verbose"),
            ("srv --token --verbose", "srv --token --verbose"),  # an option is no value
            ("https://u:p@h.com/p?token=1&b=2#access_token=9", "https://u:***@h.com/p?token=***&b=***#access_token=***"),
            ("https://tok@h/x", "https://***@h/x"),
            ("connect to https://h/x?k then", "connect to https://h/x?k=*** then"),
            ("python -m srv --verbose --port 80 a=b", "python -m srv --verbose --port 80 a=b"),
            ("the token expired", "the token expired"),
        ]
        for text, shown in cases:
            with self.subTest(text=text):
                self.assertEqual(mcpstudio.mask_secrets(text), shown)

    def test_secrets_in_any_value(self):
        """A config secret is masked wherever an audit entry holds it: a string, a number, a list, a tuple, a key."""
        secrets = ("12345678", "hunter22")
        for value, shown in (({"pin": 12345678, "n": 7, "ok": True, "f": 1.5}, {"pin": "***", "n": 7, "ok": True, "f": 1.5}),
                             (("tool", "--pw", "hunter22"), ["tool", "--pw", "***"]),
                             ({"hunter22": [None, "x hunter22"]}, {"***": [None, "x ***"]})):
            with self.subTest(value=value):
                self.assertEqual(mcpstudio.mask_secrets(value, secrets), shown)


class ShownSecretsTests(AggregatorCase):
    """Issue 31 (13, 16): keys in args, URL passwords and query values, env values: never in status or to a model."""

    SECRETS = ("sk-live-abcdef", "pw123", "tok999", "dbpass-77")

    def config(self) -> str:
        path = os.path.join(self.dir, "servers.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {
                "a": {"command": PY, "args": [self.fake, "--name", "a", "--pidfile", self.pids, "--api-key",
                                              "sk-live-abcdef", "--upstream=https://me:pw123@example.invalid/?t=tok999"],
                      "env": {"DATABASE_URL": "postgres://u:dbpass-77@db/x"}},
                "web": {"url": "https://me:pw123@example.invalid/mcp?token=tok999", "disabled": True}}}, f)
        return path

    def test_status_and_manager_tools(self):
        path = self.config()
        proc = subprocess.run(SERVER + ["status", "--config", path], env=self.env, capture_output=True, text=True,
                              timeout=60)
        self.assertIn("--api-key *** '--upstream=https://me:***@example.invalid/?t=***'", proc.stdout)
        self.assertIn("https://me:***@example.invalid/mcp?token=***", proc.stdout)
        with McpProcess("serve", "--config", path, env=self.env) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("a__env", {"name": "DATABASE_URL"})), "postgres://u:dbpass-77@db/x")
            listed = server.call("mcpstudio__servers_list", {})["structuredContent"]["servers"]
            self.assertEqual(listed[0]["env"], {"DATABASE_URL": "***"})  # no env value, secret-named or not
            everything = json.dumps(listed) + json.dumps(server.call("mcpstudio__server_logs", {"server_id": "a"}))
            self.assertIn("--api-key ***", everything)
            for secret in self.SECRETS:
                self.assertNotIn(secret, everything + proc.stdout)


@unittest.skipUnless(PYTE is not None and hasattr(os, "openpty") and sys.platform != "win32",
                     "needs pyte (pip install pyte; .ci/run installs it) and a POSIX pseudo-terminal")
class TuiShowsWhatServeServes(AggregatorCase):
    """Issue 31: the TUI's details are what `serve` serves, masked; a failed server's row starts with why."""

    upstream, tui = TuiTests.upstream, TuiTests.tui

    def test_details_and_last_error(self):
        path = os.path.join(self.dir, "servers.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {
                "good": dict(self.upstream("good", "--api-key", "sk-live-abcdef"), tools={"deny": ["crash"]}),
                "broken": self.upstream("broken", "--crash-at-start"),
                "web": {"url": "https://me:pw123@example.invalid/mcp?token=tok999", "disabled": True}},
                "namespaces": {"mine": {"servers": ["good"]}, "theirs": {"servers": ["web"]}},
                "defaultNamespace": "mine"}, f)
        tui = self.tui(path)
        tui.wait_for("good", "broken", "web")
        tui.press("jt")
        tui.wait_for("server `broken` failed to start")
        self.assertRegex(tui.row("broken"), r"failed +- +- +fake: cannot sta")  # why, first, at 80 columns
        tui.press("kt")
        tui.wait_for("good is running: 5 tools")
        tui.press("\r")
        tui.resize(24, 200)
        screen = tui.wait_for("tools (5):", "--api-key ***", "  echo ", "  crash ")  # the rows redrawn at 200 columns too
        lines = {line.split()[0]: line for line in screen.splitlines() if line.startswith("  ")}
        self.assertRegex(lines["echo"], r"echo +allowed +mine:\+ +Echo")  # no mark for theirs: good is not in it
        self.assertRegex(lines["crash"], r"crash +hidden ")  # its tools.deny: serve does not list it
        tui.press("\x1bjj\r")
        tui.wait_for("url: https://me:***@example.invalid/mcp?token=***")
        self.assertFalse([secret for secret in ShownSecretsTests.SECRETS if secret in tui.text()])
        self.assertEqual(tui.close(), 0)


class CollisionTests(AggregatorCase):
    """Issue 31 (18): a server cannot take another's tool name (prefix "") or resource URI; a warning names both."""

    upstream, serve, write = AggregatorTests.upstream, AggregatorTests.serve, AggregatorTests.write

    def test_bare_names_and_resources_cannot_shadow(self):
        data = {"mcpServers": {"evil": self.upstream("same", "--more-tools", "a__echo", prefix=""),
                               "a": self.upstream("a"), "honest": self.upstream("same")}}
        with self.serve(data) as server:
            server.initialize()
            names = [t["name"] for t in server.request("tools/list")["result"]["tools"]]
            self.assertIn("evil__a__echo", names)  # the bare one yields, under its server id
            self.assertEqual(text_of(server.call("a__echo", {"text": "hi"})), "a: hi")
            self.assertEqual(text_of(server.call("evil__a__echo", {})), "a__echo called")
            uris = [r["uri"] for r in server.request("resources/list")["result"]["resources"]]
            self.assertNotIn("fake://same/info", uris)  # two servers list it: neither takes it
            self.assertIn("fake://a/info", uris)
            self.assertIn("error", server.request("resources/read", {"uri": "fake://same/info"}))
            stderr = server.stderr_when(lambda text: "resource" in text and "a__echo" in text)
            self.assertIn("server `evil` lists a tool named a__echo, as `a` does; the one of `evil` is listed "
                          "as evil__a__echo", stderr)
            self.assertIn("servers `evil` and `honest` list the resource fake://same/info: none of them serves it", stderr)


class HttpSessionLimitTests(ScratchDir):
    """Issue 31 (11): a burst of sessions or tasks from one client ends no busy session and no unread result."""

    def test_bursts_of_tasks_and_sessions(self):
        config = os.path.join(self.dir, "tasks.json")
        with open(config, "w") as f:
            json.dump({"tools": [{"name": "quick", "command": "echo done"}, {"name": "wait", "command": "sleep 60"}]}, f)
        with HttpServerProcess("serve", "--config", config) as server:
            victim, attacker = server.initialize_session(), server.initialize_session()

            def post(method, params, sid):
                status, _, text = server.post({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, session=sid)
                return server.messages(text)[-1]
            done = post("tools/call", {"name": "quick", "arguments": {}, "task": {}}, victim)["result"]["task"]["taskId"]
            self.assertTrue(wait_until(lambda: post("tasks/get", {"taskId": done}, victim)["result"]["status"] == "completed"))
            running = post("tools/call", {"name": "wait", "arguments": {}, "task": {}}, victim)["result"]["task"]["taskId"]
            refused = [post("tools/call", {"name": "wait", "arguments": {}, "task": {}}, attacker).get("error")
                       for _ in range(100)]
            self.assertEqual(post("tasks/get", {"taskId": done}, victim).get("result", {}).get("status"), "completed")
            for _ in range(1000):  # the attacker's sessions make room for each other, not from the busy one
                self.assertEqual(server.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}})[0], 200)
            self.assertEqual(text_of(post("tasks/result", {"taskId": done}, victim)["result"]), "done\n")
            self.assertEqual(post("tasks/get", {"taskId": running}, victim).get("result", {}).get("status"), "working")
            self.assertIn("none of yours has ended", json.dumps(refused[-1]))  # the attacker is told why


class ResumableStreamLimitTests(ScratchDir):
    """Issue 31 (17): streams left for Last-Event-ID keep at most HTTP_REPLAY_BYTES a session; a late client gets 410."""

    open_stream, next_event = HttpResumeTests.open_stream, staticmethod(HttpResumeTests.next_event)

    def test_abandoned_streams_are_bounded(self):
        log, config = os.path.join(self.dir, "wire.log"), os.path.join(self.dir, "seq.json")
        with open(config, "w") as f:  # results of 1.3 MB, whole (no cut to a part and a resource link)
            json.dump({"max_text": 3000000, "tools": [{"name": "seq", "command": "seq 1 {count}"}]}, f)
        with HttpServerProcess("--log", log, "--max-output", "3000000", "serve", "--config", config) as server:
            session = server.initialize_session()
            for number in range(1, 6):  # 5 calls of ~1.3 MB each, every stream dropped before its answer
                call = {"jsonrpc": "2.0", "id": 100 + number, "method": "tools/call",
                        "params": {"name": "seq", "arguments": {"count": "200000"}}}
                connection, response = self.open_stream(server, session, {}, call)
                self.assertEqual(self.next_event(response)["id"], "r%d_0" % number)
                connection.close()

            def answered(number):
                with open(log, encoding="utf-8", errors="replace") as f:
                    return '"id":%d,"result"' % (100 + number) in f.read()
            self.assertTrue(wait_until(lambda: all(answered(n) for n in range(1, 6)), WAIT * 2))
            status, _, text = server.post(None, session=session, method="GET",
                                          headers={"Accept": "text/event-stream", "Last-Event-ID": "r1_0"})
            self.assertEqual(status, 410, text[:200])  # the oldest went: 5 x 1.3 MB is past 4 MiB
            self.assertIn("can no longer be resumed", text)
            connection, response = self.open_stream(server, session, {"Last-Event-ID": "r5_0"}, method="GET")
            self.assertEqual(json.loads(self.next_event(response)["data"])["id"], 105)  # the newest is kept whole
            connection.close()


class UnpromptedRequestTests(AggregatorCase):
    """Issue 31 (19): sampling or elicitation no call caused is refused, with a warning naming the server;
    roots/list (no person is asked) still reaches the client."""

    upstream, serve, write = AggregatorTests.upstream, AggregatorTests.serve, AggregatorTests.write

    def test_requests_from_nowhere(self):
        data = {"mcpServers": {"a": self.upstream("a", "--ask-unprompted",
                                                  "elicitation/create,sampling/createMessage,roots/list")}}
        with self.serve(data) as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "clientInfo": {"name": "t", "version": "0"},
                                          "capabilities": {"elicitation": {}, "sampling": {}, "roots": {}}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            server.request("tools/list")  # starts the server
            self.assertTrue(wait_until(lambda: "roots/list" in [m["method"] for m in server.notifications]),
                            server.context())
            stderr = server.stderr_when(lambda text: text.count("outside any call") == 2)
            for method in ("elicitation/create", "sampling/createMessage"):
                self.assertIn("server `a` sent %s outside any call: refused" % method, stderr)
            self.assertEqual([m["method"] for m in server.notifications if "id" in m], ["roots/list"])


class LoopbackTokenTests(ScratchDir):
    """Issue 31 (12): `--http` on loopback with no token says that anyone on the machine may call every tool;
    with a token, loopback requests need it too."""

    def test_loopback_without_and_with_a_token(self):
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
        with HttpServerProcess("echo", "{message}") as server:
            self.assertIn("with no token: any process or user on this machine may call every tool (set "
                          "$MCPSTUDIO_HTTP_TOKEN to require one)", "".join(server.stderr))
        with HttpServerProcess("echo", "{message}", env=dict(os.environ, MCPSTUDIO_HTTP_TOKEN="t0ken-of-a-test")) as server:
            self.assertEqual(server.post(initialize)[0], 401)
            self.assertEqual(server.post(initialize, headers={"Authorization": "Bearer t0ken-of-a-test"})[0], 200)
            self.assertNotIn("no token", "".join(server.stderr))


class UpstreamCapTests(AggregatorCase):
    """Issue 31 (20): what an upstream lists or sends is capped (item size, tool count, notification rate, task
    polling), each with a warning that names the server. (The rate's token bucket is GuardRuleTests'.)"""

    upstream, serve, write, tool_names = (AggregatorTests.upstream, AggregatorTests.serve, AggregatorTests.write,
                                          AggregatorTests.tool_names)

    def test_poll_interval(self):
        cases = [  # (suggested ms, seconds waited) -> seconds to the next poll
            (0, 0.0, 0.1), (0, 2.0, 0.6), (0, 60.0, 5.0), (None, 0.0, 1.0), (3000, 1.0, 3.0), (60000, 0.0, 5.0),
            ("x", 30.0, 5.0)]
        for suggested, waited, interval in cases:
            with self.subTest(suggested=suggested, waited=waited):
                self.assertEqual(mcpstudio.poll_interval(suggested, waited, "a"), interval)
        with self.assertRaisesRegex(mcpstudio.UpstreamError, "server `a`: its task ran past 24 hours"):
            mcpstudio.poll_interval(0, 86401.0, "a")

    def test_listing_caps_and_a_flood(self):
        done = os.path.join(self.dir, "flood-done")
        data = {"mcpServers": {"a": self.upstream("a", "--tools", "5100"),
                               "b": self.upstream("b", "--more-tools", "flood", "--flood-file", done, "--huge-description")}}
        with self.serve(data, "--tool-search", "off") as server:  # every tool listed, not a search
            server.initialize()
            names = self.tool_names(server)
            self.assertEqual(len([n for n in names if n.startswith("a__")]), 5000)
            self.assertNotIn("b__huge", names)
            server.call("b__flood", {"lines": 1000})
            self.assertTrue(wait_until(lambda: os.path.exists(done)))
            self.assertEqual(text_of(server.call("b__echo", {"text": "after"})), "b: after")  # the flood came first
            forwarded = [n for n in server.notifications if n["method"] == "notifications/message"
                         and n["params"]["logger"] == "b"]
            self.assertLess(len(forwarded), 200)  # 50 at once, 50 a second after
            stderr = server.stderr_when(lambda text: text.count("warning: server `") >= 3)
            self.assertIn("server `a` lists more than 5000 tools: the rest are left out", stderr)
            self.assertIn('server `b` lists "huge" of more than 64 KiB (description and schemas): left out', stderr)
            self.assertIn("server `b` sends more than 50 log or progress notifications a second", stderr)

    def test_an_endless_task_is_polled_ever_more_slowly(self):
        polls = os.path.join(self.dir, "polls")
        data = {"mcpServers": {"a": self.upstream("a", "--task-support", "--endless-task", "--poll-file", polls)}}
        with self.serve(data) as server:
            server.initialize()
            task = server.request("tools/call", {"name": "a__echo", "arguments": {"text": "x"}, "task": {}})
            task = task["result"]["task"]["taskId"]

            def polled(method="tasks/get"):
                with open(polls) as f:
                    return [float(line.split()[1]) for line in f if line.startswith(method)]
            self.assertTrue(wait_until(lambda: os.path.exists(polls) and len(polled()) >= 10, WAIT * 2))
            gaps = [later - earlier for earlier, later in zip(polled(), polled()[1:])]
            self.assertGreater(gaps[8], 0.5)  # 2 s on, the wait is 0.6 s: not every 0.1 s
            server.request("tasks/cancel", {"taskId": task})
            self.assertTrue(wait_until(lambda: polled("tasks/cancel")))  # the server's task is cancelled too


TOOLSEARCH_CORPUS = os.path.join(HERE, "benchmarks", "toolsearch", "corpus.json")
TOOLSEARCH_UPSTREAM = os.path.join(HERE, "benchmarks", "toolsearch_upstream.py")


class ToolIndexTests(unittest.TestCase):
    """The ranker, in-process: words, stems, and what a query finds among a few definitions."""

    TOOLS = [
        {"name": "github__create_issue", "description": "[github] Create a new issue in a GitHub repository",
         "inputSchema": {"type": "object", "properties": {"title": {"type": "string", "description": "Issue title"}}}},
        {"name": "github__list_pull_requests", "description": "[github] List and filter repository pull requests"},
        {"name": "files__delete_file", "description": "[files] Delete a file from the disk",
         "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
        {"name": "files__read_text_file", "description": "[files] Read the complete contents of a file as text"},
        {"name": "browser__take_screenshot", "title": "Screenshot",
         "description": "[browser] Take a screenshot of the current page. " + "Long words about options. " * 40},
        {"name": "browser__navigate", "description": "[browser] Navigate to a URL"},
        {"name": "chat__post_message", "description": "[chat] Post a message to a channel",
         "inputSchema": {"type": "object", "properties": {"channel_id": {"type": "string"}, "text": {}}}},
        {"name": "crm__searchObjects", "description": "[crm] Search contacts, companies and deals"},
        {"name": "calc__get_sum", "description": "[calc] Returns the sum of two numbers"},
    ]

    def test_words(self):
        for text, words in (
                ("createPullRequest", ["creat", "pull", "request"]),
                ("browser_take_screenshot", ["browser", "tak", "screenshot"]),
                ("API-get-block-children", ["api", "get", "block", "children"]),
                ("HTTPServer listing", ["http", "server", "list"]),
                ("Find the issues in my repositories", ["find", "issu", "repository"]),
                ("mapping created pages", ["map", "creat", "pag"]),
                ("status analysis string", ["status", "analysis", "string"]),
                ("boxes branches", ["box", "branch"]),
                ("replied to the copies", ["reply", "copy"]),
                ("summarise, organisation, analysed; analysis", ["summariz", "organization", "analyz", "analysis"]),
                ("open PRs, their URLs", ["open", "pr", "url"]),
                ("convertHTMLToMarkdown getPRById", ["convert", "html", "markdown", "get", "pr", "id"]),  # acronym, 2 letters
                ("hey, I'll have it finished when it isn't busy, thanks", ["finish", "busy"])):  # a person's filler out
            self.assertEqual(mcpstudio.search_words(text, {}), words, text)

    def test_ranking(self):
        index = mcpstudio.ToolIndex(self.TOOLS)
        for query, first in (
                ("create a github issue", "github__create_issue"),     # the author's words
                ("open a bug ticket", "github__create_issue"),          # other words for the action and the thing
                ("show the PRs waiting for review", "github__list_pull_requests"),
                ("remove a file", "files__delete_file"),
                ("what does notes.txt contain", "files__read_text_file"),
                ("grab a picture of the page", "browser__take_screenshot"),  # a long description does not drown it
                ("go to example.com", "browser__navigate"),
                ("tell the team channel the deploy is done", "chat__post_message"),
                ("find a customer by email", "crm__searchObjects"),
                ("screenshots", "browser__take_screenshot"),                # plural, and the title
                ("total of 3 and 4", "calc__get_sum"),                      # families of the corpus's own words
                ("navigation", "browser__navigate"),                        # a longer form of the author's word
                ("respond to them", "chat__post_message")):
            self.assertEqual([tool["name"] for tool in index.search(query, 3)][:1], [first], query)

    def assert_first(self, tools, rows):
        """Each (query, tool) row: over an index of `tools` ((name, description) pairs), the query's first hit is the tool."""
        index = mcpstudio.ToolIndex([{"name": name, "description": text} for name, text in tools])
        for query, first in rows:
            self.assertEqual([tool["name"] for tool in index.search(query, 1)], [first], query)

    def test_a_persons_verbs(self):
        self.assert_first((
            ("files__read_file", "Read a file"), ("files__delete_file", "Delete a file"),
            ("ci__run_workflow", "Run a workflow"), ("ci__create_workflow", "Create a workflow")), (("nuke old.txt", "files__delete_file"), ("give me notes.txt", "files__read_file"),
                             ("kick off the workflow", "ci__run_workflow"), ("spin up a workflow", "ci__create_workflow"),
                             ("a new workflow", "ci__create_workflow"), ("submit a workflow", "ci__create_workflow")))

    def test_everyday_words_for_a_servers_things(self):
        """A person's words for what a server names otherwise: a logo is an image, how many a query, what I told you or
        stored memory, a contact a CRM's, a local copy git's, forever slow, a row a page, since my last commit the
        working tree's status; two numbers with a comma a coordinate. Each row fails with the ranker of 577c047."""
        self.assert_first((
            ("art__generate_image", "[art] Generate an image from a prompt"), ("files__make_directory", "[files] Make a directory"),
            ("db__query", "[postgres] Run a read-only SQL query"), ("stats__count_words", "[stats] Count the words of a text"),
            ("git__log", "[git] Show the commit logs"), ("github__list_commits", "[github] List the commits of a repository"),
            ("web__performance_trace", "[web] Record a performance trace"), ("web__load_page", "[web] Load a page"),
            ("memory__delete_observations", "[memory] Delete observations from entities"),
            ("files__delete_file", "[files] Delete a file"), ("crm__create_objects", "[hubspot] Create CRM objects"),
            ("git__add", "[git] Add files to the index"), ("maps__reverse_geocode", "[maps] Find the address of a coordinate"),
            ("web__search", "[web] Search the web"), ("git__status", "[git] Show the working tree status"),
            ("github__list_commits_of_branch", "[github] List the commits of a branch"),
            ("notion__create_page", "[notion] Create a page"), ("notion__get_database", "[notion] Retrieve a database"),
            ("memory__search_nodes", "[memory] Search the nodes of the knowledge graph")), (("what changed since my last commit", "git__status"), ("insert a row for the Q3 launch", "notion__create_page"),
                             ("what have you stored about Atlas", "memory__search_nodes"),
                             ("make a logo for my project", "art__generate_image"), ("how many signups this week", "db__query"),
                             ("last commits in my local copy", "git__log"), ("the homepage takes forever", "web__performance_trace"),
                             ("forget what I told you about Bob", "memory__delete_observations"),
                             ("new contact Dana Lee", "crm__create_objects"), ("the street at 40.7128, -74.0060", "maps__reverse_geocode")))

    def test_a_persons_phrases(self):
        """A person's phrases for what a tool does: commit with a message, open an issue, open PRs, pods, the latest
        docs, keep in mind, what you remember, the time, google it, on my laptop, what I have changed, a row, more than
        N, throttle, next.js, news, let the team know, the search box, in the name, add a contact,
        an issue's short id (TINYSHOP-3F), an emoji, how big, swap, msg, the last 3 commits, uncommitted, dump to a
        path, forget that, grouped by, commit with, broken down by, all pods running. Each row fails with the ranker of 8e12ed0."""
        self.assert_first((
            ("git__commit", "[git] Record changes to the repository"), ("git__status", "[git] Show the working tree status"),
            ("chat__send_message", "[chat] Send a message"), ("github__create_issue", "[github] Create an issue"), ("github__get_issue", "[github] Get an issue"),
            ("github__list_pull_requests", "[github] List pull requests"),
            ("github__create_pull_request", "[github] Create a pull request"),
            ("k8s__get", "[kubernetes] Get or list Kubernetes resources by resource type, name and namespace"),
            ("k8s__exec_in_pod", "[kubernetes] Execute a command in a pod or container and return its output"),
            ("docs__get", "[context7] Get up-to-date documentation for a library"), ("sentry__search_docs", "[sentry] Search the docs"),
            ("memory__add_observations", "[memory] Add observations to entities"),
            ("memory__search_nodes", "[memory] Search the nodes of the knowledge graph"),
            ("clock__now", "[time] Get the current time in a zone"), ("sentry__find_teams", "[sentry] Find teams"),
            ("web__fetch", "[fetch] Fetch a URL"),
            ("web__search", "[search] Search the web"), ("maps__search_places", "[google-maps] Search for places"),
            ("files__search", "[files] Search for files in a directory"), ("notion__create_page", "[notion] Create a page"),
            ("notion__get_database", "[notion] Retrieve a database"), ("db__query", "[postgres] Run a read-only SQL query"),
            ("browser__emulate", "[browser] Emulate a device"), ("browser__tabs", "[browser] List, open or close tabs"),
            ("github__list_releases", "[github] List the releases of a repository"),
            ("browser__type", "[browser] Type text into an element"), ("git__add", "[git] Add files to the index"),
            ("crm__create_objects", "[hubspot] Create CRM objects"), ("memory__create_entities", "[memory] Create entities in the knowledge graph"),
            ("crm__create_engagement", "[hubspot] Create an engagement (a note, call or task) on a CRM record")),
            (("commit the fixes with message fix toggle", "git__commit"), ("open an issue in acme/web for the crash", "github__create_issue"),
             ("PRs still open on acme/web", "github__list_pull_requests"), ("which pods are crashing", "k8s__get"),
             ("check the latest Svelte docs on stores", "docs__get"), ("keep in mind that Dana prefers email", "memory__add_observations"),
             ("tell me what you remember about Dana", "memory__search_nodes"), ("what's the time in Berlin, is the team online", "clock__now"),
             ("google the error text", "web__search"), ("find the contract somewhere on my laptop", "files__search"),
             ("what have I changed in the site folder", "git__status"), ("add a row to the Bugs database", "notion__create_page"),
             ("customers who ordered more than 5 cakes", "db__query"), ("throttle to slow 3G", "browser__emulate"),
             ("instructions for middleware in next.js", "docs__get"), ("recent news about the github outage", "web__search"),
             ("let the team know the launch moved", "chat__send_message"),
             ("fill in the search box with acme", "browser__type"), ("find the spreadsheets with invoice in the name", "files__search"),
             ("add a new contact: Dana Lee, dana@lee.com", "crm__create_objects")))
        self.assert_first((
            ("sentry__get_issue_details", "[sentry] Get detailed information about a specific issue"),
            ("sentry__update_issue", "[sentry] Update an issue's status"), ("chat__add_reaction", "[chat] Add a reaction to a message"),
            ("chat__send_message", "[chat] Send a message"), ("web__fetch", "[fetch] Fetch a URL"), ("web__search", "[search] Search the web"),
            ("files__get_info", "[files] Retrieve detailed metadata about a file or directory: size, creation time, last modified time"),
            ("files__edit", "[files] Edit a file: make line-based edits"), ("files__search", "[files] Search for files in a directory"),
            ("git__commit", "[git] Record changes to the repository"), ("k8s__exec_in_pod", "[kubernetes] Execute a command in a pod"),
            ("git__log", "[git] Show the commit logs"),
            ("git__status", "[git] Show the working tree status"), ("files__write", "[files] Create a new file or overwrite one"),
            ("memory__delete_observations", "[memory] Delete observations from entities"), ("db__query", "[postgres] Run a read-only SQL query"),
            ("monitor__check_status", "[monitor] Check the status of a page"), ("files__move", "[files] Move or rename a file"),
            ("memory__add_observations", "[memory] Add observations to entities"),
            ("k8s__get", "[kubernetes] Get or list Kubernetes resources by resource type, name and namespace")),
            (("details of TINYSHOP-3F please", "sentry__get_issue_details"), ("mark BELLAROSA-1A as resolved", "sentry__update_issue"),
             ("put :eyes: on the alert message in #alerts", "chat__add_reaction"), ("put 👀 on Priya's message", "chat__add_reaction"),
             ("how big is dist/app.js and when was it last touched", "files__get_info"), ("in notes.md swap every v4 for v5", "files__edit"),
             ("commit everything in ~/site, msg update hours", "git__commit"), ("what changed in the last 3 commits", "git__log"),
             ("anything uncommitted in this repo?", "git__status"), ("dump these results to ~/exports/refunds.csv", "files__write"),
             ("forget that Tom moved to the data team", "memory__delete_observations"),
             ("orders for yesterday's refunds, grouped by payment method", "db__query"),
             ("commit the staged files with 'fix typo'", "git__commit"), ("revenue by region, broken down by month", "db__query"),
             ("are all pods running on staging?", "k8s__get")))

    def test_phrases_people_repeat(self):
        """Phrases that came back in set after set: log a note or a call (a CRM's activity), slow 3G (a digit and a
        capital stay one word), haven't committed, the history of changes, an issue's short id (a resource to fetch
        by id), grab (get) the README. Each row fails with the ranker of b6d6853."""
        self.assert_first((
            ("crm__create_engagement", "[hubspot] Create an engagement (a note or a task) on a CRM record; activity reporting feeds off it"),
            ("crm__create_objects", "[hubspot] Create CRM objects"), ("memory__add_observations", "[memory] Add observations to entities"),
            ("github__add_issue_comment", "[github] Add a comment to an issue"),
            ("browser__emulate", "[browser] Emulate a device or a network such as slow 3G"),
            ("browser__start_trace", "[browser] Start a performance trace of the page and reload it"),
            ("git__status", "[git] Show the working tree status"),
            ("search__local", "[search] Find local businesses and places near an address"),
            ("git__log", "[git] Show the commit logs"), ("git__show", "[git] Show the contents of a commit"),
            ("sentry__get_resource", "[sentry] Fetch a Sentry resource by URL or by resource type and id: issues, events, traces"),
            ("sentry__search_issue_events", "[sentry] Search the events of an issue"),
            ("sentry__analyze_issue", "[sentry] Analyze an issue with Seer and find its root cause"),
            ("web__fetch", "[fetch] Fetch a URL and return its content as markdown"),
            ("gitlab__get_file_contents", "[gitlab] Get the contents of a file from a project"),
            ("docs__get", "[context7] Get up-to-date documentation for a library"),
            ("gitlab__create_repository", "[gitlab] Create a new project")),
            (("log a note on the Acme deal: contract sent", "crm__create_engagement"),
             ("log a call with Dana at Brightline, she wants 3-year terms", "crm__create_engagement"),
             ("pretend I'm on slow 3G and reload the site", "browser__emulate"),
             ("what's changed in my local repo that I haven't committed", "git__status"),
             ("show me the history of changes to the project", "git__log"),
             ("pull up the details of Sentry issue WEB-4812", "sentry__get_resource"),
             ("stack trace for TINYSHOP-3F please", "sentry__get_resource"),
             ("the old theme is on gitlab under rosa/shop-theme, grab me the README from it", "gitlab__get_file_contents")))
        self.assert_first((  # round 8, the first three rows failing on bb128ca: look up is a search, save my edits
            # commits, the team of the person's own is not an organization's team (the other rows guard that)
            ("time__convert_time", "[time] Convert a time between time zones"), ("sentry__find_teams", "[sentry] Find the teams of an organization"),
            ("chat__send_message", "[slack] Send a message to a channel"),
            ("crm__search_objects", "[hubspot] Search CRM objects such as contacts, companies and deals"),
            ("crm__get_object", "[hubspot] Get a CRM object by id"), ("web__fetch", "[fetch] Fetch a URL and return its content"),
            ("git__commit", "[git] Record changes to the repository"), ("files__edit", "[filesystem] Edit a file: line-based edits"),
            ("memory__add_observations", "[memory] Add observations to entities in the knowledge graph")),
            (("look up the Northwind Robotics deal in the CRM", "crm__search_objects"),
             ('save my edits to the website with the note "updated pricing copy"', "git__commit"),
             ("if I schedule the call for 9am Pacific, what time is that for the team in Berlin?", "time__convert_time"),
             ("can you let the team know the launch moved to friday", "chat__send_message"),
             ("find the teams in our sentry org", "sentry__find_teams")))

    def test_phrases_that_are_not_what_they_seem(self):
        """A phrase's words that mean something else keep their meaning: google drive is not a web search, news
        in a link is not news, a deal's note is not a commit's, a table's size is not a file's, C++'s :: is not an
        emoji's name, files changed in a PR are not the working tree's. Each row fails with the phrases as first
        written (2fb42f5)."""
        self.assert_first((
            ("gdrive__search", "[gdrive] Search for files in Google Drive"), ("web__search", "[brave] Search the web"),
            ("chat__post_message", "[slack] Post a message to a channel"), ("chat__add_reaction", "[slack] Add a reaction to a message"),
            ("crm__create_note", "[hubspot] Create a note on a CRM record"), ("github__list_commits", "[github] List the commits of a repository"),
            ("git__commit", "[git] Record changes to the repository"), ("git__status", "[git] Show the working tree status"),
            ("github__get_pull_request_files", "[github] Get the files changed in a pull request"),
            ("files__search", "[files] Search for files in a directory"), ("db__query", "[postgres] Run a read-only SQL query"),
            ("files__get_info", "[files] Retrieve detailed metadata about a file or directory: size, creation time, last modified time"),
            ("docs__get", "[context7] Get up-to-date documentation for a library")),
            (("search google drive for the budget", "gdrive__search"), ("post the hacker news link in #general", "chat__post_message"),
             ("save the deal with a note about pricing", "crm__create_note"), ("how big is the orders table", "db__query"),
             ("docs for std::vector::push_back", "docs__get"), ("what files were changed in pull request 42", "github__get_pull_request_files")))

    def test_phrases_that_are_not_what_they_seem_either(self):
        """Round 7's phrases keep to their meaning: committing to a renewal is not a git commit, SKU-4410 is not an
        issue's id (the first two rows fail on d10d346); errors in a network tab are not the console's, a question
        about who links to a URL is still a web search, errors in an issue's title are not the console's, and a note
        logged in memory is not a CRM's (guards the review asked for)."""
        self.assert_first((
            ("browser__list_network_requests", "[chrome-devtools] List the network requests of the page"),
            ("browser__list_console_messages", "[chrome-devtools] List the console messages of the page"),
            ("crm__update_objects", "[hubspot] Update CRM objects such as a deal's stage"), ("git__status", "[git] Show the working tree status"),
            ("chat__history", "[slack] Get the recent messages of a channel"),
            ("sentry__get_resource", "[sentry] Fetch a Sentry resource by URL or by resource type and id: issues, events, traces"),
            ("web__search", "[brave] Search the web"), ("web__fetch", "[fetch] Fetch a URL and return its content as markdown"),
            ("github__create_issue", "[github] Create an issue in a repository"),
            ("crm__create_engagement", "[hubspot] Create an engagement (a note or a task) on a CRM record; activity reporting feeds off it"),
            ("memory__add_observations", "[memory] Add observations to entities in the knowledge graph")),
            (("the client hasn't committed to the renewal yet, update the Acme deal stage", "crm__update_objects"),
             ("show me what Dana posted about SKU-4410 in #ops", "chat__history"),
             ("errors in chrome's network tab for the api calls", "browser__list_network_requests"),
             ("who links to https://myblog.dev/post-1?", "web__search"),
             ("open a github issue about errors on the signup page", "github__create_issue"),
             ("log a note in memory that Dana prefers email", "memory__add_observations")))
        self.assert_first((  # a note on a page is a comment (fails on b9c0e6c); a CRM's note and an issue's stay theirs
            ("notion__create_comment", "[notion] Create a comment on a page or a block"), ("notion__post_page", "[notion] Create a page"),
            ("memory__add_observations", "[memory] Add observations to entities in the knowledge graph"),
            ("crm__create_engagement", "[hubspot] Create an engagement (a note or a task) on a CRM record"),
            ("github__add_issue_comment", "[github] Add a comment to an issue")),
            (("add a note on the roadmap notion page", "notion__create_comment"),
             ("leave a note on issue 42 that it's fixed", "github__add_issue_comment"),
             ("log a note on the Acme deal", "crm__create_engagement")))

    def test_values_say_what_they_are(self):
        """A value in a query (a URL, a path, a #channel, an identifier, ...) finds the tool whose parameter takes it;
        a phrase's verb (to log a note, to pull data out) the tool that does it, and a question a search."""
        self.assert_first((
            ("web__fetch", "Fetch a URL"), ("files__read_file", "Read the file at a path"),
            ("chat__history", "Read the messages of a channel"), ("code__search", "Search code"),
            ("k8s__port_forward", "Forward a local port to a pod in a namespace"), ("crm__find", "Find a contact by email"),
            ("chat__profile", "Show a user's profile"), ("papers__search", "Search arXiv papers"),
            ("docs__query", "Query a library's docs"), ("db__run_sql", "Run a read-only SQL query"),
            ("ci__list_issues", "List the issues of a pipeline"), ("git__list_issues", "List the issues of a repository"),
            ("clock__convert", "Convert between zones"), ("crm__add_note", "Add a note to a contact"),
            ("web__extract", "Extract data"), ("memo__save", "Save a memo"), ("memo__search", "Search the memos"),
            ("vcs__commit", "Commit the staged changes"), ("tracker__add_issue", "Add an issue to the backlog of a project board"),
            ("apps__open_app", "Open an installed app")), (("https://example.com/blog/launch", "web__fetch"), ("example.org/about", "web__fetch"),
                             ("~/notes/todo.md", "files__read_file"), ("/var/app/", "files__read_file"),
                             ("notes.txt", "files__read_file"), ("#general", "chat__history"),
                             ("where is parseConfig", "code__search"), ("where is load_settings", "code__search"),
                             ("db.internal:5432", "k8s__port_forward"), ("dana@acme.com", "crm__find"),
                             ("@dana", "chat__profile"),
                             ("orders where status='failed'", "db__run_sql"), ("issues of acme/web-ui", "git__list_issues"),
                             ("find arXiv papers", "papers__search"), ("Next.js docs", "docs__query"),  # no shape here
                             ("3pm in Berlin", "clock__convert"), ("log a call", "crm__add_note"),  # phrases
                             ("pull the prices", "web__extract"), ("what memos do we have?", "memo__search"),  # a question
                             ('commit "search the memos, find code"', "vcs__commit"),  # quoted: the person's own text
                             ("data/dump.sql", "files__read_file"), ("the namesapce", "k8s__port_forward"),  # a typo's swapped letters
                             ("open rivalapp.com", "web__fetch"), ("file a bug", "tracker__add_issue"),
                             ("open rivalapp.co.uk", "web__fetch"), ("icons/logo.svg", "files__read_file")))  # a bare domain; to file one

    def test_a_hostile_query_costs_linear_time(self):
        """A client's long query of one run of word characters, dots or dashes is read in linear time (each value
        shape begins a run only): 100,000 characters took half a minute when the email and port shapes tried every start."""
        index = mcpstudio.ToolIndex(self.TOOLS)
        for unit, size in (("a", 100000), ("a.", 100000), ("-a", 100000), ("a@a.", 100000), ("1:", 100000), ("-1.1,", 100000),
                           ("1.", 100000), ("AB-", 100000), ("A1-", 100000), (":a", 100000), ("select ", 400000)):
            started = time.monotonic()  # AB-AB-... took 17 s when the short-id shape tried every start; select ... 20 s
            index.search(unit * (size // len(unit)), 5)
            self.assertLess(time.monotonic() - started, 5.0, unit)

    def test_server_as_context(self):
        """Of two tools alike, the one whose server's other tools speak of the query's words ranks first."""
        index = mcpstudio.ToolIndex([{"name": name, "description": text} for name, text in (
            ("web__query", "[web] Run a query"), ("db__query", "[db] Run a query"),
            ("db__list_tables", "[db] List the tables of the SQL database"))])
        names = [tool["name"] for tool in index.search("run a query on the sales database", 3)]
        self.assertLess(names.index("db__query"), names.index("web__query"))
        self.assertEqual([tool["name"] for tool in mcpstudio.ToolIndex(index.tools[:1]).search("query", 5)], ["web__query"])
        index = mcpstudio.ToolIndex([{"name": "web__query", "description": "[web] Run a query"},
                                     {"name": "postgres__query", "description": "[postgres] Run a query"}])
        self.assertEqual(index.search("query the database", 1)[0]["name"], "postgres__query")  # a product's name, a family's word

    def test_limits_and_no_match(self):
        index = mcpstudio.ToolIndex(self.TOOLS)
        self.assertEqual(index.search("zzz qqq", 5), [])
        self.assertEqual(index.search("the a of", 5), [])
        self.assertEqual(len(index.search("file page message issue", 2)), 2)
        self.assertEqual(mcpstudio.ToolIndex([]).search("anything", 5), [])
        self.assertIs(index.search("delete", 1)[0], self.TOOLS[2])  # the definition itself

    def test_found_tools_per_session(self):
        """list_changed only when a session's list gained a tool; at most FOUND_LIMIT, the least recently found go."""
        class Session:
            def __init__(self):
                self.sent = []

            def notify(self, method, params):
                self.sent.append(method)
        search = mcpstudio.ToolSearch(None, "on", 40, [])
        one, two = Session(), Session()
        for names, session, notified in ((["a", "b"], one, 1), (["b", "a"], one, 1), (["a"], two, 1),
                                         (["t%d" % n for n in range(mcpstudio.FOUND_LIMIT)], one, 2), (["a"], one, 3)):
            search.remember(names, session)
            self.assertEqual(len(session.sent), notified)
        self.assertEqual(list(search.found[one])[:2], ["t1", "t2"])  # "b", then "a" and "t0" made room
        self.assertEqual(list(search.found[one])[-1], "a")
        self.assertEqual(len(search.found[one]), mcpstudio.FOUND_LIMIT)
        self.assertEqual(list(search.found[two]), ["a"])
        del two
        self.assertEqual(len(search.found), 1)  # a session that ended is forgotten

    def test_recorded_corpus(self):
        """Over the 289 recorded tools, each intent set is found in the first five as often as today (a floor each;
        people32 to people35, the blind check, are left to the benchmark)."""
        with open(TOOLSEARCH_CORPUS) as f:
            corpus = json.load(f)
        tools = [dict(tool, name="%s__%s" % (server, tool["name"]), description="[%s] %s" % (server, tool.get("description")))
                 for server, entry in corpus.items() for tool in entry["tools"]]
        with open(os.path.join(HERE, "benchmarks", "toolsearch", "intents.json")) as f:
            intents = json.load(f)
        index = mcpstudio.ToolIndex(tools)
        found = sum(1 for intent in intents if {tool["name"] for tool in index.search(intent["q"], 5)} & set(intent["tools"]))
        self.assertGreaterEqual(found / len(intents), 0.94)
        for name, least in (("heldout", 0.95), ("people", 0.9), ("people2", 0.95), ("people3", 0.85), ("people4", 0.95),
                            ("people5", 0.95), ("people6", 0.9), ("people7", 0.95), ("people8", 0.9), ("people9", 0.95),
                            ("people10", 0.95), ("people11", 0.95), ("people12", 0.85), ("people13", 0.95),
                            ("people14", 0.95), ("people15", 0.9), ("people16", 0.95), ("people17", 0.95),
                            ("people18", 0.95), ("people19", 0.9), ("people20", 0.8), ("people21", 0.9), ("people22", 0.95),
                            ("people23", 0.95), ("people24", 0.95), ("people25", 0.9), ("people26", 0.95), ("people27", 0.95),
                            ("people28", 0.9), ("people29", 0.95), ("people30", 0.9), ("people31", 0.95)):
            with open(os.path.join(HERE, "benchmarks", "toolsearch", name + ".json")) as f:
                intents = json.load(f)
            found = sum(1 for intent in intents if {tool["name"] for tool in index.search(intent["q"], 5)} & set(intent["tools"]))
            self.assertGreaterEqual(found / len(intents), least, name)  # held where they stand today


class ToolSearchTests(AggregatorCase):
    """The aggregator in search mode over upstreams that serve recorded real tools (GitHub, Slack, Playwright)."""

    def recorded(self, name, **keys):
        return dict({"command": PY, "args": [TOOLSEARCH_UPSTREAM, TOOLSEARCH_CORPUS, name]}, **keys)

    def serve(self, data, *args):
        path = os.path.join(self.dir, "search.json")
        with open(path, "w") as f:
            json.dump(dict({"mcpServers": {name: self.recorded(name) for name in ("github", "slack", "playwright")}},
                           **data), f)
        return McpProcess("serve", "--config", path, *args, env=self.env)

    def names(self, server, params=None):
        return [tool["name"] for tool in server.request("tools/list", params or {})["result"]["tools"]]

    def search(self, server, query, limit=5, meta=None):
        result = server.call("mcpstudio__search_tools", {"query": query, "limit": limit}, meta=meta)
        self.assertNotIn("isError", result)
        return result

    def test_a_long_query_is_refused_at_once(self):
        # Issue 41.11: a 1 MB query took seconds on the loop; the schema says the cap, a longer query is a tool error.
        with self.serve({"toolSearch": "on"}) as server:
            server.initialize()
            schema, = [tool["inputSchema"] for tool in server.request("tools/list")["result"]["tools"]
                       if tool["name"] == "mcpstudio__search_tools"]
            self.assertEqual(schema["properties"]["query"]["maxLength"], mcpstudio.SEARCH_QUERY_MAX)
            started = time.monotonic()
            result = server.call("mcpstudio__search_tools", {"query": "create issue " * 80000}, timeout=10)
            self.assertLess(time.monotonic() - started, 5)
            self.assertTrue(result["isError"])
            self.assertIn("%d characters at most" % mcpstudio.SEARCH_QUERY_MAX, text_of(result))
            self.assertFalse(self.search(server, "create a github issue " * 20, 1).get("isError"))  # 440: searched

    def test_two_tools_then_found_tools_join_the_list(self):
        with self.serve({"toolSearch": "on"}) as server:
            server.initialize()
            self.assertEqual(self.names(server), ["mcpstudio__search_tools", "mcpstudio__call_tool"])
            before = len(server.notifications_of("notifications/tools/list_changed"))  # servers' first listings may
            result = self.search(server, "create a github issue about a bug", 3)
            found = result["structuredContent"]["tools"]
            self.assertEqual(found[0]["name"], "github__create_issue")
            self.assertEqual(len(found), 3)
            self.assertEqual(found[0]["inputSchema"]["required"], ["owner", "repo", "title"])  # the full definition
            self.assertTrue(found[0]["description"].startswith("[github] Create a new issue"))
            self.assertIn("github__create_issue: [github] Create a new issue", text_of(result))
            self.assertTrue(wait_until(lambda: len(server.notifications_of("notifications/tools/list_changed")) > before))
            listed = self.names(server)
            self.assertEqual(listed[:2], ["mcpstudio__search_tools", "mcpstudio__call_tool"])
            self.assertEqual(sorted(listed[2:]), sorted(tool["name"] for tool in found))
            # a found tool, called by its own name and through call_tool, reaches its server
            self.assertEqual(text_of(server.call("github__create_issue", {"owner": "o", "repo": "r", "title": "t"})),
                             'github/create_issue called with {"owner": "o", "repo": "r", "title": "t"}')
            # a direct call works for a tool never listed in this session, and call_tool for any permitted tool
            self.assertEqual(text_of(server.call("slack__slack_post_message", {"text": "hi"})),
                             'slack/slack_post_message called with {"text": "hi"}')
            called = server.call("mcpstudio__call_tool", {"name": "playwright__browser_navigate",
                                                          "arguments": {"url": "https://example.com"}})
            self.assertEqual(text_of(called), 'playwright/browser_navigate called with {"url": "https://example.com"}')
            unknown = server.call("mcpstudio__call_tool", {"name": "github__no_such_tool", "arguments": {}})
            self.assertTrue(unknown["isError"])
            self.assertIn("Unknown tool: github__no_such_tool", text_of(unknown))
            bad = server.call("mcpstudio__call_tool", {"name": "mcpstudio__call_tool", "arguments": {}})
            self.assertTrue(bad["isError"])
            self.assertTrue(server.call("mcpstudio__search_tools", {"query": "x", "limit": 21})["isError"])

    def test_found_tools_are_bounded_per_session(self):
        with self.serve({"toolSearch": "on", "toolSearchPin": ["slack__slack_post_*"]}) as server:
            server.initialize()
            self.assertEqual(self.names(server)[2:], ["slack__slack_post_message"])  # pinned
            for query in ("github", "slack", "browser page", "pull request", "file", "click", "issue comment"):
                self.search(server, query, 20)
            listed = self.names(server)
            self.assertIn("slack__slack_post_message", listed)  # pinned, and maybe found too
            self.assertIn(len(listed) - 2, (mcpstudio.FOUND_LIMIT, mcpstudio.FOUND_LIMIT + 1))

    def test_denied_tools_are_never_found_or_called(self):
        data = {"toolSearch": "on", "namespaces": {"work": {"servers": ["github", "slack", "playwright"],
                                                            "tools": {"deny": ["github__create_issue"]}}},
                "defaultNamespace": "work",
                "toolPermissions": [{"namespace": "work", "server": "slack", "toolName": "slack_post_message",
                                     "enabled": False}]}
        with self.serve(data) as server:
            server.initialize()
            found = [t["name"] for t in self.search(server, "create github issue", 20)["structuredContent"]["tools"]]
            self.assertNotIn("github__create_issue", found)
            self.assertIn("github__update_issue", found)
            found = [t["name"] for t in self.search(server, "slack post message", 20)["structuredContent"]["tools"]]
            self.assertNotIn("slack__slack_post_message", found)
            self.assertIn("slack__slack_reply_to_thread", found)
            for name in ("github__create_issue", "slack__slack_post_message"):
                refused = server.call("mcpstudio__call_tool", {"name": name, "arguments": {}})
                self.assertTrue(refused["isError"])
                self.assertNotIn("called with", text_of(refused))
                self.assertIn("error", server.request("tools/call", {"name": name, "arguments": {}}))
            self.assertIn("Tool denied", text_of(server.call("mcpstudio__call_tool", {"name": "slack__slack_post_message"})))

    def test_auto_on_each_side_of_the_threshold(self):
        # github lists 26 tools, slack 8, playwright 25; the manager tools are hidden
        for threshold, client, searching in ((58, "test", True), (59, "test", False), (10, "claude-code", False),
                                             (10, "Claude Code", False), (10, "cursor", True)):
            with self.serve({"toolSearchThreshold": threshold}, "--no-manager-tools") as server:
                server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                              "clientInfo": {"name": client, "version": "1"}})
                server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
                listed = self.names(server)
                self.assertEqual(len(listed), 2 if searching else 59, (threshold, client))
                self.assertEqual("mcpstudio__search_tools" in listed, searching)

    def test_flag_and_namespace_choose_the_mode(self):
        data = {"toolSearch": "on", "namespaces": {"web": {"servers": ["playwright"], "toolSearch": "off"},
                                                   "all": {"servers": ["github", "slack", "playwright"]}}}
        for args, count in ((("--namespace", "all"), 2), (("--namespace", "web"), 25 + 7),
                            (("--namespace", "all", "--tool-search", "off"), 59 + 7),
                            (("--namespace", "web", "--tool-search", "on"), 2)):
            with self.serve(data, *args) as server:
                server.initialize()
                self.assertEqual(len(self.names(server)), count, args)

    def test_modern_era_uses_the_definitions_of_the_result(self):
        with self.serve({"toolSearch": "on"}) as server:
            listed = self.names(server, {"_meta": MODERN_META})
            self.assertEqual(listed, ["mcpstudio__search_tools", "mcpstudio__call_tool"])
            found = self.search(server, "slack reply in a thread", 2, meta=MODERN_META)["structuredContent"]["tools"]
            self.assertEqual(found[0]["name"], "slack__slack_reply_to_thread")
            self.assertIn("thread_ts", found[0]["inputSchema"]["properties"])
            self.assertEqual(self.names(server, {"_meta": MODERN_META}), listed)  # no session: nothing is kept
            called = server.call("slack__slack_reply_to_thread", {"text": "ok"}, meta=MODERN_META)
            self.assertEqual(text_of(called), 'slack/slack_reply_to_thread called with {"text": "ok"}')
            called = server.call("mcpstudio__call_tool", {"name": "slack__slack_get_users", "arguments": {}},
                                 meta=MODERN_META)
            self.assertEqual(text_of(called), "slack/slack_get_users called with {}")
            self.assertEqual(server.notifications_of("notifications/tools/list_changed"), [])

    def test_status_counts_tools_and_says_whether_search_is_on(self):
        data = {"namespaces": {"web": {"servers": ["playwright"], "toolSearch": "off"},
                               "all": {"servers": ["github", "slack", "playwright"]}}, "defaultNamespace": "all"}
        with self.serve(data) as server:  # lists, so the servers' tools are cached
            server.initialize()
            self.assertEqual(len(self.names(server)), 2)
        out = subprocess.run(SERVER + ["status", "--config", os.path.join(self.dir, "search.json")], capture_output=True,
                             text=True, timeout=WAIT, stdin=subprocess.DEVNULL, env=self.env)
        self.assertIn("web              playwright  (25 tools, tool search off)", out.stdout)
        self.assertIn("all              github, slack, playwright  (59 tools, tool search auto (on past 40))", out.stdout)

    def test_inspect_shows_what_a_search_mode_client_sees_and_searches(self):
        with self.serve({}):
            pass  # writes search.json
        serve = ["serve", "--config", os.path.join(self.dir, "search.json")]
        seen = subprocess.run(SERVER + ["inspect", "--json"] + serve, capture_output=True, text=True, timeout=WAIT, stdin=subprocess.DEVNULL, env=self.env)
        self.assertEqual([t["name"] for t in json.loads(seen.stdout)["tools"]], ["mcpstudio__search_tools",
                                                                                "mcpstudio__call_tool"])
        found = subprocess.run(SERVER + ["inspect", "--json", "--search", "reply in a slack thread"] + serve,
                               capture_output=True,
                               text=True, timeout=WAIT, stdin=subprocess.DEVNULL, env=self.env)
        tools = json.loads(found.stdout)["tools"]
        self.assertEqual(tools[0]["name"], "slack__slack_reply_to_thread")
        self.assertIn("thread_ts", tools[0]["inputSchema"]["properties"])

    def test_config_mistakes_name_the_key(self):
        for data, key in (({"toolSearch": "sometimes"}, "toolSearch"), ({"toolSearchPin": [1]}, "toolSearchPin"),
                          ({"toolSearchThreshold": "many"}, "toolSearchThreshold")):
            path = os.path.join(self.dir, "bad.json")
            with open(path, "w") as f:
                json.dump(dict(data, mcpServers={"github": self.recorded("github")}), f)
            out = subprocess.run(SERVER + ["serve", "--config", path], capture_output=True, text=True, timeout=WAIT,
                                 stdin=subprocess.DEVNULL, env=self.env)
            self.assertNotEqual(out.returncode, 0)
            self.assertIn("bad.json: %s" % key, out.stderr)
        with open(path, "w") as f:
            json.dump({"mcpServers": {"github": self.recorded("github")}}, f)
        out = subprocess.run(SERVER + ["serve", "--tool-search", "maybe", "--config", path], capture_output=True,
                             text=True, timeout=WAIT, stdin=subprocess.DEVNULL, env=self.env)
        self.assertIn("--tool-search maybe: expected one of on, off, auto", out.stderr)


class GuardRuleTests(unittest.TestCase):
    """The guard rails' pure parts: token buckets, the result cache, the rules a config gives."""

    def test_token_buckets(self):
        # A burst of `calls`, then `calls` per `seconds`; several limits take a token from each, or from none.
        buckets = {}
        limits = [("tool", 2, 10.0)]
        for now, expected in ((0.0, 0.0), (0.0, 0.0), (0.0, 5.0), (4.0, 1.0), (5.0, 0.0), (5.0, 5.0)):
            self.assertAlmostEqual(mcpstudio.take_token(buckets, limits, now)[0], expected, 9, (now, buckets))
        self.assertEqual(mcpstudio.take_token(buckets, limits, 6.0)[1], (2, 10.0))  # the limit that refused
        both = [("file", 1, 60.0), ("other", 5, 1.0)]
        self.assertEqual(mcpstudio.take_token(buckets, both, 0.0), (0.0, None))
        self.assertEqual(mcpstudio.take_token(buckets, both, 1.0)[0], 59.0)
        self.assertEqual(buckets["other"], (4.0, 0.0))  # refused by `file`: nothing taken from `other`

    def test_result_cache_bounds(self):
        # Bounded in entries and bytes (oldest out first); expired entries are gone; an entry too large is not kept.
        cache = mcpstudio.ResultCache(max_entries=2, max_bytes=100)
        cache.put("a", {"n": 1}, 10.0, 40)
        cache.put("b", {"n": 2}, 10.0, 40)
        cache.put("c", {"n": 3}, 10.0, 40)
        self.assertEqual((cache.get("a", 0.0), cache.get("c", 0.0), cache.size), (None, ({"n": 3}, 10.0), 80))
        cache.put("d", {"n": 4}, 10.0, 50)
        self.assertEqual((list(cache.entries), cache.size), (["c", "d"], 90))
        cache.put("e", {}, 10.0, 101)
        self.assertEqual((cache.get("e", 0.0), cache.get("d", 10.0), cache.size), (None, None, 40))

    def test_result_cache_drops_an_owners_older_version(self):
        # Issue 41.2: an owner's entry of a new version (a restarted or reloaded server) drops that owner's
        # older entries, and no other owner's.
        cache = mcpstudio.ResultCache()
        cache.put("a1", {"n": 1}, 10.0, 10, "a", "run1")
        cache.put("a2", {"n": 2}, 10.0, 10, "a", "run1")
        cache.put("b1", {"n": 3}, 10.0, 10, "b", "run1")
        cache.put("a3", {"n": 4}, 10.0, 10, "a", "run2")
        self.assertEqual((list(cache.entries), cache.size), (["b1", "a3"], 20))

    def test_rules_table(self):
        # What a tool, server or file may say, and the errors that name the key.
        loader = mcpstudio.ConfigLoader("guard.json", data={})
        for given, expected in (
                ({"rateLimit": {"calls": 3, "seconds": 1.5}}, {"rateLimit": (3, 1.5, "session")}),
                ({"rateLimit": {"calls": 1, "seconds": 9, "scope": "global"}, "confirm": "destructive"},
                 {"rateLimit": (1, 9, "global"), "confirm": "destructive"}),
                ({"cache": {"ttl": 60, "shared": True}, "confirm": False}, {"cache": (60, True), "confirm": False}),
                ({"rateLimit": {"calls": 0, "seconds": 1}}, "tools[0].rateLimit: expected {\"calls\": 10"),
                ({"rateLimit": {"calls": 2.5, "seconds": 1}}, "tools[0].rateLimit: expected"),
                ({"rateLimit": {"calls": 2, "seconds": 1, "scope": "user"}}, 'tools[0].rateLimit: expected {"calls": 10, "seconds": 60}, and `scope` "session"'),
                ({"rateLimit": {"calls": 2, "second": 1}}, "tools[0].rateLimit.second: unknown key (did you mean `seconds`?)"),
                ({"cache": {"ttl": -1}}, "tools[0].cache: expected {\"ttl\": SECONDS}"),
                ({"confirm": "always"}, "tools[0].confirm: expected true, false or \"destructive\"")):
            with self.subTest(given=given):
                if isinstance(expected, dict):
                    self.assertEqual(mcpstudio.read_rules(loader, given, "tools[0]"), expected)
                else:
                    with self.assertRaises(mcpstudio.ConfigError) as caught:
                        mcpstudio.read_rules(loader, given, "tools[0]")
                    self.assertIn(expected, str(caught.exception))


GUARD_COUNTER = """\
    import sys
    with open(sys.argv[1], "a") as f:
        f.write(sys.argv[2] + "\\n")
    print("ran " + sys.argv[2])
    sys.exit(int(sys.argv[3]) if sys.argv[3:] and sys.argv[3].isdigit() else 0)
    """


class GuardTests(ScratchDir):
    """Audit log, rate limits, confirmation and the result cache, driven as a client would."""

    def setUp(self):
        super().setUp()
        self.counter = self.script("counter.py", GUARD_COUNTER, executable=False)
        self.runs = os.path.join(self.dir, "runs")
        self.audit = os.path.join(self.dir, "audit.jsonl")

    def tool(self, name, extra="", **keys):
        return dict({"name": name, "command": "%s %s %s {word}%s" % (PY, self.counter, self.runs, extra)}, **keys)

    def serve(self, tools, env=None, **top):
        path = os.path.join(self.dir, "guard.json")
        with open(path, "w") as f:
            json.dump(dict({"audit": {"file": self.audit}, "tools": tools}, **top), f)
        return McpProcess("serve", "--config", path, env=env)

    def ran(self) -> list:
        if not os.path.exists(self.runs):
            return []
        with open(self.runs) as f:
            return f.read().split()

    def audit_lines(self, path=None) -> list:
        with open(path or self.audit, encoding="utf-8") as f:
            return [json.loads(line) for line in f]  # every line whole JSON

    def test_audit_cache_rate_limit_and_confirmation(self):
        # One line per call that ran, was cached, rate-limited, confirmed, refused or failed; secrets masked.
        read_only, additive = {"readOnlyHint": True}, {"destructiveHint": False}
        tools = [self.tool("look", annotations=read_only, cache={"ttl": 600}),
                 self.tool("fail", " 3", annotations=read_only, cache={"ttl": 600}),
                 self.tool("burst", annotations=additive, rateLimit={"calls": 2, "seconds": 10}),  # refused if < 5 s
                 self.tool("wipe", annotations={"destructiveHint": True}),
                 self.tool("keyed", " {api_key}", annotations=additive,
                           environment={"GUARD_API_TOKEN": "${GUARD_API_TOKEN}"}),
                 {"name": "pin", "command_template": "%s %s %s {word} {code}" % (PY, self.counter, self.runs),
                  "annotations": additive,
                  "parameters": {"word": {"type": "string"}, "code": {"type": "string", "secret": True}}}]
        env = dict(os.environ, GUARD_API_TOKEN="s3cr3t-value-42")
        with self.serve(tools, env=env, confirm="destructive") as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                          "clientInfo": {"name": "guard-test", "version": "7"}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            first, second = server.call("look", {"word": "a"}), server.call("look", {"word": "a"})
            self.assertEqual((text_of(first), text_of(second), self.ran()), ("ran a\n", "ran a\n", ["a"]))
            self.assertEqual(second["_meta"]["mcpstudio/cached"], True)  # the second call ran nothing
            self.assertNotIn("_meta", first)
            for _ in range(2):  # an error is never cached
                self.assertTrue(server.call("fail", {"word": "f"})["isError"])
            self.assertEqual(self.ran().count("f"), 2)
            results = [server.call("burst", {"word": "b"}) for _ in range(3)]
            self.assertEqual([r["isError"] for r in results], [False, False, True])
            self.assertRegex(text_of(results[2]), r"^Not run: burst allows 2 calls per 10 s; retry in ([0-4]\.\d|5\.0) s\.$")
            time.sleep(results[2]["_meta"]["mcpstudio/retryAfter"])  # the time the server said to wait
            self.assertFalse(server.call("burst", {"word": "b"})["isError"])
            self.assertEqual(self.ran().count("b"), 3)
            for answer, word in (({"action": "accept", "content": {"run": False}}, "no"),
                                 ({"action": "decline"}, "no"), ({"action": "accept", "content": {"run": True}}, "yes")):
                server.next_id += 1
                call_id = server.next_id
                server.send({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                             "params": {"name": "wipe", "arguments": {"word": word}}})
                self.assertTrue(wait_until(lambda: server.notifications_of("elicitation/create")), server.context())
                with server.lock:
                    asked = server.notifications.pop()
                self.assertIn("Allow wipe to run `%s %s %s %s`?" % (PY, self.counter, self.runs, word),
                              asked["params"]["message"])
                server.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})
                result = server.wait_response(call_id)["result"]
                self.assertEqual(result["isError"], word == "no", result)
            self.assertEqual(self.ran().count("no") + self.ran().count("yes"), 1)  # only after a yes
            # a value the config took from a secret-named variable, passed back in by the model
            keyed = server.call("keyed", {"word": "s3cr3t-value-42", "api_key": "hunter2-secret"})
            self.assertEqual(text_of(keyed), "ran s3cr3t-value-42\n")  # counter.py prints its first word
            self.assertEqual(text_of(server.call("pin", {"word": "p", "code": "pin-7355608"})), "ran p\n")
        with self.serve(tools, confirm="destructive", env=env) as server:
            server.initialize()  # no elicitation: it says confirmation is required and how to switch it off
            refused = server.call("wipe", {"word": "never"})
            self.assertIn('needs the user\'s confirmation', text_of(refused))
            self.assertIn('set "confirm": false at the top of the config, or on this tool\'s entry or its server\'s.',
                          text_of(refused))  # where it was asked for: the file here
        self.assertNotIn("never", self.ran())
        with open(self.audit, encoding="utf-8") as f:
            text = f.read()
        self.assertNotIn("s3cr3t-value-42", text)
        self.assertNotIn("hunter2-secret", text)
        self.assertNotIn("pin-7355608", text)  # a parameter the config marks "secret"
        if mcpstudio._POSIX:
            self.assertEqual(os.stat(self.audit).st_mode & 0o777, 0o600)
        lines = self.audit_lines()
        by_tool = collections.defaultdict(list)
        for line in lines:
            by_tool[line["tool"]].append(line)
        look = by_tool["look"]
        self.assertEqual([line.get("cached") for line in look], [None, True])
        self.assertEqual((look[0]["exitCode"], look[0]["client"], look[0]["session"]), (0, "guard-test 7", "stdio"))
        self.assertEqual(look[0]["argv"], [PY, self.counter, self.runs, "a"])
        self.assertEqual([(line["exitCode"], line["isError"]) for line in by_tool["fail"]], [(3, True), (3, True)])
        self.assertEqual([line.get("rateLimited") for line in by_tool["burst"]], [None, None, True, None])
        self.assertEqual([(line.get("confirmed"), line.get("refused")) for line in by_tool["wipe"]], [
            (False, "not confirmed"), (False, "not confirmed"), (True, None),
            (None, "confirmation required; the client cannot ask")])
        self.assertEqual(by_tool["keyed"][0]["arguments"], {"word": "***", "api_key": "***"})
        self.assertEqual(by_tool["keyed"][0]["argv"][-2:], ["***", "***"])
        self.assertEqual((by_tool["pin"][0]["arguments"], by_tool["pin"][0]["argv"][-2:]), ({"word": "p", "code": "***"},
                                                                                          ["p", "***"]))
        self.assertTrue(all(line["ms"] >= 0 and line["bytes"] > 0 and line["time"] for line in lines))

    def test_destructive_is_any_tool_not_read_only_nor_marked_harmless(self):
        # The spec's destructiveHint defaults to true and means nothing on a read-only tool: "confirm":
        # "destructive" asks for a tool with no annotations too (it ran unasked before).
        tools = [self.tool("plain"), self.tool("wipe", annotations={"destructiveHint": True}),
                 self.tool("look", annotations={"readOnlyHint": True, "destructiveHint": True}),
                 self.tool("add", annotations={"destructiveHint": False}),
                 self.tool("odd", annotations={"readOnlyHint": "yes"}),
                 self.tool("own", annotations={"readOnlyHint": True}, confirm=True)]
        with self.serve(tools, confirm="destructive") as server:
            server.initialize()  # no elicitation: a tool that needs confirmation is not run
            said = {tool["name"]: text_of(server.call(tool["name"], {"word": tool["name"]})) for tool in tools}
        asked = {name: "needs the user's confirmation" in text for name, text in said.items()}
        self.assertEqual(asked, {"plain": True, "wipe": True, "look": False, "add": False, "odd": True, "own": True})
        self.assertTrue(said["own"].endswith('set "confirm": false on tool own in the config.'), said["own"])
        self.assertEqual(sorted(self.ran()), ["add", "look"])

    def test_cache_needs_a_read_only_tool(self):
        # A tool-level cache on a tool not annotated read-only is refused at startup, naming the key.
        with self.serve([self.tool("write", cache={"ttl": 5})]) as server:
            self.assertEqual(server.close(), 1)
        self.assertIn("tools[0].cache: only a read-only tool's results may be cached", "".join(server.stderr))

    def test_audit_intact_under_load_rotation_and_sigkill(self):
        # 1,000 concurrent calls: 1,000 whole lines. Rotation keeps `keep` files. A SIGKILL mid-stream leaves
        # only whole lines.
        tools = [self.tool("many", rateLimit={"calls": 40, "seconds": 3600})]
        with self.serve(tools) as server:
            server.initialize()
            for number in range(1000):
                server.send({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                             "params": {"name": "many", "arguments": {"word": "w%d" % number}}})
            for number in range(1000):
                server.wait_response(number, timeout=WAIT * 4)
        lines = self.audit_lines()
        self.assertEqual(len(lines), 1000)
        self.assertEqual(sum(1 for line in lines if line.get("rateLimited")), 960)
        os.remove(self.audit)
        with self.serve(tools, audit={"file": self.audit, "maxBytes": 2048, "keep": 2}) as server:
            server.initialize()
            for number in range(100):
                server.send({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                             "params": {"name": "many", "arguments": {"word": "x"}}})
            def rotated_twice():  # the live file is briefly absent while it is rotated
                try:
                    return os.path.exists(self.audit + ".2") and os.path.getsize(self.audit) > 1024
                except FileNotFoundError:
                    return False
            self.assertTrue(wait_until(rotated_twice))
            server.proc.kill()
            server.proc.wait(WAIT)
        kept = [name for name in os.listdir(self.dir) if name.startswith("audit")]
        self.assertLessEqual(set(kept), {"audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"})  # killed mid-rotation: .1 may be missing
        for path in [os.path.join(self.dir, name) for name in kept]:
            self.assertTrue(all(line["tool"] == "many" for line in self.audit_lines(path)))
            self.assertLessEqual(os.path.getsize(path), 2048)

    def test_audit_failure(self):
        # An audit file that cannot be written: said on stderr, the call still runs; with "required", refused.
        folder = os.path.join(self.dir, "gone")
        for required, expected in ((False, "ran q\n"), (True, "Not run: the audit log %s cannot be written"
                                                                % os.path.join(folder, "a.jsonl"))):
            with self.serve([self.tool("q")], audit={"file": os.path.join(folder, "a.jsonl"), "required": required}) as server:
                server.initialize()
                self.assertTrue(text_of(server.call("q", {"word": "q"})).startswith(expected))
                self.assertIn("audit log %s: cannot" % os.path.join(folder, "a.jsonl"),
                              server.stderr_when(lambda text: "audit log" in text))
        self.assertEqual(self.ran(), ["q"])

    @unittest.skipUnless(mcpstudio._POSIX, "symbolic links, owners and modes are POSIX's")
    def test_a_planted_audit_file_is_never_written(self):
        # Issue 41.4: a symbolic link planted where the audit goes (to a ~/.bashrc) got JSON lines appended, and a
        # planted 0666 file stayed 0666: each is refused (a required audit refuses the call, nothing runs), and a
        # planted rotated file stops the rotation before anything is moved.
        rc = os.path.join(self.dir, "bashrc")
        with open(rc, "w") as f:
            f.write("alias ll='ls -l'\n")
        link, shared = os.path.join(self.dir, "link.jsonl"), os.path.join(self.dir, "shared.jsonl")
        os.symlink(rc, link)
        with open(shared, "w"):
            pass
        os.chmod(shared, 0o666)
        for path, reason in ((link, "symbolic link"), (shared, "readable or writable by others (mode 666")):
            with self.serve([self.tool("q")], audit={"file": path, "required": True}) as server:
                server.initialize()
                refused = server.call("q", {"word": "$(touch pwned)"})
                self.assertTrue(text_of(refused).startswith("Not run: the audit log %s cannot be written" % path), refused)
                self.assertIn(reason, server.stderr_when(lambda text, reason=reason: reason in text))
            with self.serve([self.tool("q")], audit={"file": path}) as server:  # not required: it runs, unaudited
                server.initialize()
                self.assertEqual(text_of(server.call("q", {"word": "w"})), "ran w\n")
        self.assertEqual(self.ran(), ["w", "w"])
        with open(rc) as f:
            self.assertEqual(f.read(), "alias ll='ls -l'\n")
        self.assertEqual((os.path.getsize(shared), os.stat(shared).st_mode & 0o777), (0, 0o666))
        rotated = os.path.join(self.dir, "rot.jsonl")
        os.symlink(rc, rotated + ".1")
        with self.serve([self.tool("q")], audit={"file": rotated, "maxBytes": 1024}) as server:
            server.initialize()
            for _ in range(8):
                self.assertFalse(server.call("q", {"word": "r" * 200})["isError"])
            self.assertIn("rot.jsonl.1 is not a regular file", server.stderr_when(lambda text: "rot.jsonl.1" in text))
        self.assertTrue(os.path.islink(rotated + ".1"))
        self.assertFalse(os.path.exists(rotated + ".2"))
        with open(rc) as f:
            self.assertEqual(f.read(), "alias ll='ls -l'\n")

    def test_two_processes_share_one_audit_file(self):
        # Issue 41.17: two servers on one audit file (a desktop app and an editor on one config): after one rotated,
        # the other went on writing into the renamed file. Each write goes to the file the path names now, and
        # every line is kept (in FILE or a rotated FILE.N).
        tools = [self.tool("q")]
        audit = {"file": self.audit, "maxBytes": 2048, "keep": 5}
        with self.serve(tools, audit=audit) as first, self.serve(tools, audit=audit) as second:
            first.initialize()
            second.initialize()
            for number in range(8):
                for server, name in ((first, "a"), (second, "b")):
                    self.assertFalse(server.call("q", {"word": "%s%02d-%s" % (name, number, "x" * 150)})["isError"])
        files = ["%s.%d" % (self.audit, number) for number in range(5, 0, -1)] + [self.audit]  # oldest first
        words = [[line["arguments"]["word"][:3] for line in self.audit_lines(path)] for path in files
                 if os.path.exists(path)]
        self.assertEqual(sum(words, []), ["%s%02d" % (name, number) for number in range(8) for name in "ab"], words)

    def test_a_long_argument_is_clipped_in_the_audit_line(self):
        # A file given as a data: URI (or any long value) is not copied whole into the audit log.
        with self.serve([self.tool("look")]) as server:
            server.initialize()
            self.assertFalse(server.call("look", {"word": "w" * 50000})["isError"])
        (line,) = self.audit_lines()
        self.assertEqual(len(line["arguments"]["word"]), 1000)
        self.assertTrue(line["arguments"]["word"].endswith("..."))

    def test_an_argument_cannot_rewrite_the_confirmation(self):
        # Issue 41.9: newlines, a run of spaces and bidi or zero-width characters in the model's value wrote a fake
        # "Allow ... draft.txt" line after the real command: the form is one line of visible escapes, padding
        # collapsed, then the exact argv as a list, program first.
        fake = "draft.txt`?\n\nAllow wipe to run `rm draft.txt`?" + " " * 80 + "\u202e\u200b\x1b[8m"
        with self.serve([self.tool("wipe", confirm=True)]) as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                          "clientInfo": {"name": "t", "version": "0"}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                         "params": {"name": "wipe", "arguments": {"word": fake}}})
            self.assertTrue(wait_until(lambda: server.notifications_of("elicitation/create")), server.context())
            asked = server.notifications_of("elicitation/create")[0]
            server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}})
            self.assertTrue(server.wait_response(7)["result"]["isError"])
        first, words = asked["params"]["message"].split("\n")
        self.assertTrue(first.startswith("Allow wipe to run `%s %s %s 'draft.txt`?\\n\\nAllow wipe" % (PY, self.counter, self.runs)),
                        first)
        self.assertIn("`? [80 spaces] \\u202e\\u200b\\x1b[8m'`?", first)
        self.assertEqual(json.loads(words.partition(": ")[2]),
                         [PY, self.counter, self.runs, fake.replace(" " * 80, " [80 spaces] ")])  # exact, but the padding
        self.assertIn("\\u202e\\u200b", words)  # the invisible ones shown as JSON escapes
        self.assertEqual(self.ran(), [])

    def test_audit_masks_secrets_by_schema_whatever_their_form(self):
        # Issue 41.3: a `"secret": true` parameter sent as a number, an integer secret (a PIN), a secret of three
        # characters and one sent under its `-` respelling (which the command gets) reach neither the audit
        # line's `arguments` nor its `argv`; the command still gets each value.
        tools = [{"name": "login", "command_template": "%s %s %s {word} {short} {code} {pin} {pass_phrase}"
                  % (PY, self.counter, self.runs),
                  "parameters": {"word": {"type": "string"}, "code": {"type": "string", "secret": True},
                                 "pin": {"type": "integer", "secret": True}, "short": {"type": "string", "secret": True},
                                 "pass_phrase": {"type": "string", "secret": True}}}]
        with self.serve(tools) as server:
            server.initialize()
            result = server.call("login", {"word": "w", "code": 7355608, "pin": 4711, "short": "Q7q",
                                           "pass-phrase": "open-31337"})
            self.assertEqual(text_of(result), "ran w\n", result)
        (line,) = self.audit_lines()
        text = json.dumps(line)
        for secret in ("7355608", "4711", "Q7q", "open-31337"):
            self.assertNotIn(secret, text)
        self.assertEqual(line["arguments"], {"word": "w", "code": "***", "pin": "***", "short": "***",
                                             "pass_phrase": "***"})
        self.assertEqual(line["argv"][3:], ["w", "***", "***", "***", "***"])
        self.assertEqual(line["argv"][1], self.counter)  # a short secret masks whole words only

    def test_template_and_script_modes(self):
        # --audit and --rate-limit in template mode and in script mode: the same step, the same lines.
        with McpProcess("--audit", self.audit, "--rate-limit", "1/60", "echo", "{message}") as server:
            server.initialize()
            self.assertEqual(text_of(server.call("echo", {"message": "x"})), "x\n")
            self.assertRegex(text_of(server.call("echo", {"message": "y"})), r"retry in (59\.\d|60\.0) s")
        folder = os.path.join(self.dir, "scripts")
        os.mkdir(folder)
        self.script(os.path.join("scripts", "say"), """\
            #!%s
            import json, sys
            if sys.argv[1:] == ["--help"]:
                print(json.dumps({"description": "Say a word"}))
                sys.stderr.write(json.dumps({"word": {"type": "string", "required": True}}))
                sys.exit(0)
            print("said " + json.load(sys.stdin)["word"])
            sys.exit(4)
            """ % PY)
        with McpProcess("--audit", self.audit, "--root-directory", folder) as server:
            server.initialize()
            self.assertTrue(server.call("say", {"word": "s"})["isError"])  # mcpd's exit 4: not found
        lines = self.audit_lines()
        self.assertEqual([(line["tool"], line.get("argv"), line.get("rateLimited")) for line in lines[:2]],
                         [("echo", ["echo", "x"], None), ("echo", ["echo", "y"], True)])
        self.assertEqual((lines[2]["tool"], lines[2]["exitCode"], lines[2]["arguments"]), ("say", 4, {"word": "s"}))


def _prometheus_parser():
    """prometheus_client's text parser (test-only; installed, or in $MCPSTUDIO_PYTE_PATH as .ci/run puts it)."""
    if os.environ.get("MCPSTUDIO_PYTE_PATH") and os.environ["MCPSTUDIO_PYTE_PATH"] not in sys.path:
        sys.path.append(os.environ["MCPSTUDIO_PYTE_PATH"])
    try:
        from prometheus_client.parser import text_string_to_metric_families
        return text_string_to_metric_families
    except ImportError:
        return None


class GuardHttpTests(AggregatorCase):
    """/health, /metrics and the endpoint-wide rate limit of --http."""

    def get(self, server, path, token=None):
        import urllib.error
        import urllib.request
        request = urllib.request.Request("http://127.0.0.1:%d%s" % (server.port, path),
                                         headers={"Authorization": "Bearer " + token} if token else {})
        try:
            with urllib.request.urlopen(request, timeout=WAIT) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def call(self, server, session, number, arguments):
        status, _, text = server.post({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {
            "name": "echo", "arguments": arguments}}, session=session)
        return status, server.messages(text)[-1]

    @unittest.skipIf(_prometheus_parser() is None, "prometheus_client is not installed (.ci/run installs it)")
    def test_metrics_parse_with_the_counts_made(self):
        # Three calls that ran, one refused for its arguments: the counts, the histogram, the sessions gauge.
        # Both behind the token, unless the config's openEndpoints opens one.
        token = "metrics-token-1234"
        with HttpServerProcess("--http-token", token, "echo", "{message}") as server:
            self.assertEqual(self.get(server, "/metrics")[0], 401)  # behind the same token rule as /mcp
            status, headers, text = server.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
                headers={"Authorization": "Bearer " + token})
            session = headers["mcp-session-id"]
            auth = {"Authorization": "Bearer " + token}
            for number, arguments in ((2, {"message": "a"}), (3, {"message": "b"}), (4, {"message": "c"}), (5, {})):
                status, _, text = server.post({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {
                    "name": "echo", "arguments": arguments}}, session=session, headers=auth)
                self.assertEqual(server.messages(text)[-1]["result"]["isError"], number == 5, text)
            status, text = self.get(server, "/metrics", token)
            self.assertEqual(status, 200)
            samples = {}
            for family in _prometheus_parser()(text):
                for sample in family.samples:
                    samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
            tool = (("tool", "echo"),)
            self.assertEqual((samples[("mcpstudio_calls_total", tool)], samples[("mcpstudio_errors_total", tool)],
                              samples[("mcpstudio_cached_total", tool)], samples[("mcpstudio_call_seconds_count", tool)],
                              samples[("mcpstudio_call_seconds_bucket", (("le", "+Inf"), ("tool", "echo")))],
                              samples[("mcpstudio_sessions", ())]), (4, 1, 0, 4, 4, 1))
        path = os.path.join(self.dir, "open.json")
        with open(path, "w") as f:
            json.dump({"tools": [{"name": "echo", "command": "echo {message}"}], "openEndpoints": ["/health"]}, f)
        with HttpServerProcess("--http-token", token, "serve", "--config", path) as server:
            self.assertEqual(self.get(server, "/health"), (200, '{"status": "ok", "servers": {}}'))  # opened
            self.assertEqual(self.get(server, "/metrics")[0], 401)
            self.assertEqual(server.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})[0], 401)

    def test_health_shows_a_dead_server(self):
        # 200 with each server's state, turning to show the one that died; 503 when the config cannot serve.
        data = {"mcpServers": {"up": {"command": PY, "args": [self.fake, "--name", "up", "--pidfile", self.pids],
                                      "eager": True}}}
        path = os.path.join(self.dir, "health.json")
        with open(path, "w") as f:
            json.dump(data, f)
        with HttpServerProcess("serve", "--config", path, env=self.env) as server:
            session = server.initialize_session()
            self.assertTrue(wait_until(lambda: json.loads(self.get(server, "/health")[1])["servers"] == {"up": "running"}))
            self.assertEqual(self.get(server, "/health")[0], 200)
            server.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "up__crash", "arguments": {}}}, session=session)
            self.assertTrue(wait_until(lambda: json.loads(self.get(server, "/health")[1])["servers"]["up"] != "running"),
                            self.get(server, "/health"))
            self.assertEqual(self.get(server, "/health")[0], 200)  # this server still serves
        with open(path, "w") as f:
            json.dump(dict(data, namespaces={"a": {"servers": ["up"]}}, defaultNamespace="nope"), f)
        with HttpServerProcess("serve", "--config", path, env=self.env) as server:
            status, text = self.get(server, "/health")
            self.assertEqual(status, 503)
            self.assertIn("nope", json.loads(text)["status"])

    def test_endpoint_rate_limit(self):
        # --http-rate-limit 3/60: the fourth request gets 429 with Retry-After; nothing of it runs.
        with HttpServerProcess("--http-rate-limit", "3/60", "echo", "{message}") as server:
            session = server.initialize_session()  # two requests: initialize, initialized
            self.assertEqual(server.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=session)[0], 200)
            status, headers, text = server.post({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, session=session)
            self.assertEqual(status, 429)
            self.assertTrue(15 <= int(headers["retry-after"]) <= 20, headers)  # one request per 20 s after the burst
            self.assertIn("this endpoint takes 3 requests per 60 s; retry in", json.loads(text)["error"]["message"])

    def test_aggregated_calls_audited_cached_and_counted(self):
        # A forwarded call is audited with its server; a server's cache answers the second call (and a
        # 2026-07-28 result carries ttlMs/cacheScope); servers_list counts per tool.
        audit = os.path.join(self.dir, "audit.jsonl")
        data = {"audit": {"file": audit}, "mcpServers": {"up": {
            "command": PY, "args": [self.fake, "--name", "up", "--pidfile", self.pids], "cache": {"ttl": 60}}},
            "namespaces": {"work": {"servers": ["up"]}}, "defaultNamespace": "work"}
        path = os.path.join(self.dir, "agg.json")
        with open(path, "w") as f:
            json.dump(data, f)
        with McpProcess("serve", "--config", path, env=self.env) as server:
            server.initialize()
            server.request("logging/setLevel", {"level": "info"})
            first, second = server.call("up__echo", {"text": "x"}), server.call("up__echo", {"text": "x"})
            self.assertEqual((text_of(first), text_of(second)), ("up: x", "up: x"))
            self.assertTrue(second["_meta"]["mcpstudio/cached"])
            self.assertEqual(len([n for n in server.notifications_of("notifications/message")
                                  if n["params"].get("data") == "echoing x"]), 1)  # the server saw one call
            modern = server.call("up__echo", {"text": "x"}, meta=MODERN_META)
            self.assertEqual(modern["cacheScope"], "private")
            self.assertTrue(0 < modern["ttlMs"] <= 60000, modern)
            self.assertTrue(server.call("up__crash", {})["isError"])
            counts = server.call("mcpstudio__servers_list", {})["structuredContent"]["tools"]
            self.assertEqual({tool: (row["calls"], row["cached"], row["error"]) for tool, row in counts.items()},
                             {"up__echo": (3, 2, 0), "up__crash": (1, 0, 1)})
            self.assertTrue(all(row["p50Ms"] <= row["p99Ms"] for row in counts.values()))
        with open(audit, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual([(line["tool"], line.get("server"), line.get("cached")) for line in lines],
                         [("up__echo", "up", None), ("up__echo", "up", True), ("up__echo", "up", True),
                          ("up__crash", "up", None), ("mcpstudio__servers_list", None, None)])
        self.assertEqual((lines[3]["isError"], lines[0]["namespace"]), (True, "work"))

    def test_cache_dropped_when_the_server_restarts_or_moves(self):
        # Issue 41.2: a cached server's entries answer only for the run of it that made them: after it crashed
        # (and a call starts it again) and after a reload points the entry at another server, the call reaches
        # the server that runs now.
        data = {"mcpServers": {"up": {"command": PY, "args": [self.fake, "--name", "up"], "cache": {"ttl": 600}}}}
        path = os.path.join(self.dir, "agg.json")
        with open(path, "w") as f:
            json.dump(data, f)
        with McpProcess("serve", "--config", path, env=self.env) as server:
            server.initialize()
            server.request("logging/setLevel", {"level": "info"})
            self.assertEqual(text_of(server.call("up__echo", {"text": "x"})), "up: x")
            self.assertTrue(server.call("up__echo", {"text": "x"})["_meta"]["mcpstudio/cached"])
            self.assertTrue(server.call("up__crash", {})["isError"])
            again = server.call("up__echo", {"text": "x"})
            self.assertNotIn("_meta", again)  # the new run answered it
            self.assertEqual(len([n for n in server.notifications_of("notifications/message")
                                  if n["params"].get("data") == "echoing x"]), 2)
            data["mcpServers"]["up"]["args"] = [self.fake, "--name", "elsewhere"]
            with open(path, "w") as f:
                json.dump(data, f)
            server.proc.send_signal(signal.SIGHUP)
            self.assertTrue(wait_until(lambda: text_of(server.call("up__echo", {"text": "x"})) == "elsewhere: x", 10),
                            server.context())

    def test_audit_masks_nested_secrets_of_a_forwarded_call(self):
        # Issue 41.3: a forwarded call's nested `options.password` and `headers.Authorization` were written in clear.
        audit = os.path.join(self.dir, "audit.jsonl")
        path = os.path.join(self.dir, "agg.json")
        with open(path, "w") as f:
            json.dump({"audit": {"file": audit}, "mcpServers": {"up": {"command": PY, "args": [self.fake, "--name", "up"]}}}, f)
        with McpProcess("serve", "--config", path, env=self.env) as server:
            server.initialize()
            result = server.call("up__echo", {"text": "x", "options": {"password": "pw-31337", "depth": 2},
                                              "headers": [{"Authorization": "Bearer b-31337"}]})
            self.assertEqual(text_of(result), "up: x")
        with open(audit, encoding="utf-8") as f:
            (line,) = [json.loads(text) for text in f]
        self.assertNotIn("31337", json.dumps(line))
        self.assertEqual(line["arguments"], {"text": "x", "options": {"password": "***", "depth": 2},
                                             "headers": [{"Authorization": "***"}]})

    def test_confirmation_through_input_required(self):
        # 2026-07-28: the call answers input_required (key `confirm`) with the command line; the retry with a
        # yes runs it, one with a no does not.
        marker = os.path.join(self.dir, "ran")
        path = os.path.join(self.dir, "confirm.json")
        with open(path, "w") as f:
            json.dump({"tools": [{"name": "touch", "command": "%s %s %s" % (PY, self.script("touch.py", """\
                import sys
                open(sys.argv[1], "a").close()
                """, executable=False), marker), "confirm": True}]}, f)
        with HttpServerProcess("serve", "--config", path) as server:
            meta = dict(MODERN_META, **{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})

            def call(extra):
                params = dict({"name": "touch", "arguments": {}, "_meta": meta}, **extra)
                return server.messages(server.modern("tools/call", params)[2])[-1]["result"]
            first = call({})
            self.assertEqual(first["resultType"], "input_required")
            self.assertIn("Allow touch to run `%s " % PY, first["inputRequests"]["confirm"]["params"]["message"])
            no = call({"inputResponses": {"confirm": {"action": "accept", "content": {"run": False}}}})
            self.assertTrue(no["isError"])
            self.assertFalse(os.path.exists(marker))
            yes = call({"inputResponses": {"confirm": {"action": "accept", "content": {"run": True}}}})
            self.assertFalse(yes["isError"], yes)
            self.assertTrue(os.path.exists(marker))


# --------------------------------------------------------------------------
# A command's life: output within a budget, kept whole as a resource
# --------------------------------------------------------------------------

class OutputFitTests(unittest.TestCase):
    def test_fit_text_table(self):
        # Under the budget a text is untouched; past it, whole lines of head and tail around an exact note.
        uri = "mcpstudio://output/k"
        text = "".join("line %d\n" % n for n in range(1, 101))
        self.assertEqual(mcpstudio.fit_text(text, len(text), uri), text)
        fitted = mcpstudio.fit_text(text, 80, uri)
        head, note, tail = fitted.partition("[...")
        self.assertEqual(head, "line 1\nline 2\nline 3\nline 4\nline 5\n")
        self.assertTrue(tail.endswith("line 99\nline 100\n"))
        middle = text[len(head):len(text) - len(tail.split("\n", 1)[1])]
        self.assertIn(" %d lines (%d bytes) left out" % (middle.count("\n"), len(middle)), note + tail)
        self.assertIn("%s?lines=6-%d" % (uri, 5 + middle.count("\n")), tail)
        one_line = mcpstudio.fit_text("x" * 1000, 100, uri)  # no line end to cut at: cut inside the line
        self.assertTrue(one_line.startswith("x" * 50 + "\n[... 1 lines (900 bytes)"))
        self.assertTrue(one_line.endswith("]\n" + "x" * 50))

    def test_output_slice_table(self):
        # ?lines= numbers lines from 1; both ends included, either may be left out.
        data = b"a\nbb\nccc\nd"
        for query, expected in (("", data), ("lines=2-3", b"bb\nccc\n"), ("lines=3-", b"ccc\nd"),
                                ("lines=-1", b"a\n"), ("lines=4-9", b"d"), ("lines=9-", b""), ("lines=0-1", b"a\n"),
                                ("lines=-", data), ("lines=3-2", b"")):
            self.assertEqual(mcpstudio.output_slice(data, query), expected, query)
        for query, expected in (("lines=2-2", b"b\n"), ("lines=3-", b""), ("lines=2-", b"b\n"), ("lines=1-9", b"a\nb\n")):
            self.assertEqual(mcpstudio.output_slice(b"a\nb\n", query), expected, query)
        for query in ("lines=a-b", "x=1", "bytes=0-1", "lines=1-2&x=1"):
            with self.assertRaises(ValueError):
                mcpstudio.output_slice(data, query)


class OutputBudgetTests(ScratchDir):
    @unittest.skipUnless(sys.platform.startswith("linux"), "reads /proc")
    def test_a_line_slice_reads_only_to_its_last_line(self):
        # Issue 41.13: `?lines=1-2` of a kept 1 MB output of short lines built every line's offset (40 MB per read
        # of 1 MiB); the server's peak memory now stays where it was.
        lines = self.script("lines.py", "import sys\nsys.stdout.write('x\\n' * 500000)\n", False)
        config = os.path.join(self.dir, "lines.json")
        with open(config, "w") as f:
            json.dump({"tools": [{"name": "lines", "command": "%s %s" % (PY, lines), "max_text": 2000}]}, f)

        def peak(pid):
            with open("/proc/%d/status" % pid) as f:
                return int([line.split()[1] for line in f if line.startswith("VmHWM:")][0])
        with McpProcess("serve", "--config", config) as server:
            server.initialize()
            uri, = [item["uri"] for item in server.call("lines", {})["content"] if item["type"] == "resource_link"]
            before = peak(server.proc.pid)
            for _ in range(3):
                read = server.request("resources/read", {"uri": uri + "?lines=1-2"})
                self.assertEqual(read["result"]["contents"][0]["text"], "x\nx\n")
            self.assertLess(peak(server.proc.pid) - before, 8 << 10, "KiB more at the peak")

    def test_five_megabytes(self):
        # 5 MB of output: head, tail and the exact count of what was left out; the link reads it all back.
        writer = self.script("five.py", """\
            import sys
            out = sys.stdout.buffer
            for n in range(100000):
                out.write(b"%06d %s\\n" % (n, b"y" * 42))
            """)
        with open(os.path.join(self.dir, "whole"), "wb") as f:
            for n in range(100000):
                f.write(b"%06d %s\n" % (n, b"y" * 42))
        with open(os.path.join(self.dir, "whole"), "rb") as f:
            whole = f.read()
        self.assertEqual(len(whole), 5000000)
        with McpProcess("--max-output", "6000000", PY, writer) as server:
            server.initialize()
            result = server.call(os.path.basename(PY), {})
            text, link = result["content"][0]["text"], result["content"][-1]
            self.assertFalse(result["isError"])
            self.assertLess(len(text), mcpstudio.DEFAULT_MAX_TEXT + 400)
            self.assertTrue(text.startswith("000000 "))
            self.assertTrue(text.endswith("099999 " + "y" * 42 + "\n"))
            head, note = text.split("[... ", 1)
            shown = head.count("\n") + note.split("]\n", 1)[1].count("\n")
            left = re.match(r"(\d+) lines \((\d+) bytes\) left out", note)
            self.assertEqual(int(left.group(1)), 100000 - shown)
            self.assertEqual(int(left.group(2)), (100000 - shown) * 50)
            self.assertEqual(link["type"], "resource_link")
            self.assertEqual(link["size"], 5000000)
            self.assertIn(link["uri"], note)
            contents = server.request("resources/read", {"uri": link["uri"]})["result"]["contents"]
            self.assertEqual(contents[0]["text"].encode(), whole)
            part = re.search(r"\?lines=(\d+)-(\d+)", note)
            read = server.request("resources/read", {"uri": link["uri"] + part.group()})["result"]["contents"]
            self.assertEqual(read[0]["text"].encode(), whole[len(head.encode()):len(whole) - len(note.split("]\n", 1)[1])])
            read = server.request("resources/read", {"uri": link["uri"] + "?lines=3-4"})["result"]["contents"]
            self.assertEqual(read[0]["text"], "000002 " + "y" * 42 + "\n000003 " + "y" * 42 + "\n")

    def test_private_and_bounded(self):
        # A kept output is read only by the session that made it; a budget comes from the flag, the
        # file or the tool; an error result keeps under Claude Code's cut of about 11,000 characters.
        writer = self.script("many.py", """\
            import sys
            sys.stdout.write("".join("row %d\\n" % n for n in range(int(sys.argv[1]))))
            sys.exit(int(sys.argv[2]))
            """)
        config = os.path.join(self.dir, "c.json")
        with open(config, "w") as f:
            json.dump({"max_text": 3000, "tools": [
                {"name": "rows", "command": "%s %s {n} {code}" % (PY, writer)},
                {"name": "few", "command": "%s %s {n} {code}" % (PY, writer), "max_text": 500}]}, f)
        with McpProcess("serve", "--config", config) as server:
            server.initialize()
            rows = server.call("rows", {"n": "5000", "code": "0"})["content"][0]["text"]
            self.assertLess(len(rows), 3000 + 400)
            self.assertLess(len(server.call("few", {"n": "5000", "code": "0"})["content"][0]["text"]), 500 + 400)
            failed = server.call("rows", {"n": "50000", "code": "3"})
            self.assertTrue(failed["isError"])
            self.assertLess(len(text_of(failed)), 3000 + 400)
            uri = failed["content"][-1]["uri"]
            self.assertEqual(server.request("resources/read", {"uri": uri + "?lines=50000-"})["result"]["contents"][0]["text"],
                             "row 49999\n")
            other = server.request("resources/read", {"uri": uri, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}})
            self.assertIn("Output not found", other["error"]["message"])
            bad = server.request("resources/read", {"uri": uri + "?lines=x"})
            self.assertIn("?lines=FROM-TO", bad["error"]["message"])
        with McpProcess("--max-text", "20000", PY, writer, "{n}", "{code}") as server:
            server.initialize()
            failed = server.call(os.path.basename(PY), {"n": "50000", "code": "3"})
            self.assertLess(len(text_of(failed)), mcpstudio.ERROR_MAX_TEXT + 600)
            self.assertEqual(server.call(os.path.basename(PY), {"n": "3", "code": "0"})["content"],
                             [{"type": "text", "text": "row 0\nrow 1\nrow 2\n"}])


@unittest.skipUnless(_sdk_available(), "the official MCP Python SDK is not installed (set MCPSTUDIO_SDK_PYTHON)")
class OutputFeedSdkTests(ScratchDir):
    """A running command's lines reach the official Python SDK client as they come, in both eras."""

    run_client = PythonSdkInteropTests.run_client
    CLIENT = """
        import anyio, json, os, time
        import mcp
        from mcp import ClientSession, StdioServerParameters, stdio_client

        params = StdioServerParameters(command=os.environ["SERVER_PY"], env=dict(os.environ),
                                       args=[os.environ["MCPSTUDIO"], "--name", "tick", os.environ["SERVER_PY"],
                                             os.environ["TICK"]])
        seen = []

        async def on_progress(progress, total, message):
            if message and message.startswith("tick"):
                seen.append((time.time(), message))

        def report(result, version):
            first_written = float(seen[0][1].split()[2])
            print(json.dumps({"version": version, "messages": [m for _, m in seen], "text": result.content[0].text,
                              "latency": seen[0][0] - first_written}))
        """

    def tick(self) -> str:
        return self.script("tick.py", """\
            import sys, time
            for n in range(3):
                print("tick %d %.6f" % (n, time.time()), flush=True)
                time.sleep(1)
            """)

    def check(self, out, version):
        # Each line came as a progress message while the command ran, the first within 0.5 s.
        self.assertEqual(out["version"], version)
        self.assertEqual([m.split()[:2] for m in out["messages"]], [["tick", "0"], ["tick", "1"], ["tick", "2"]])
        self.assertEqual(out["text"].splitlines(), out["messages"])
        self.assertLess(out["latency"], 0.5)

    def test_handshake_era(self):
        out = self.run_client(self.CLIENT + """
        async def main():
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    report(await session.call_tool("tick", {}, progress_callback=on_progress), init.protocol_version)
        anyio.run(main)
        """, TICK=self.tick())
        self.check(out, "2025-11-25")

    def test_2026_era(self):
        out = self.run_client(self.CLIENT + """
        async def main():
            async with mcp.Client(params) as client:
                report(await client.call_tool("tick", {}, progress_callback=on_progress), client.protocol_version)
        anyio.run(main)
        """, TICK=self.tick())
        self.check(out, "2026-07-28")


class OutputFeedTests(ScratchDir):
    def test_log_lines_rate_and_task_status(self):
        # At `info`, lines come as log notifications, at most one per FEED_INTERVAL however fast they are
        # written, each with the latest FEED_LINES lines clipped; a task's statusMessage shows the last line.
        fast = self.script("fast.py", """\
            import sys, time
            for n in range(2000):
                print("line %d %s" % (n, "z" * 500), flush=True)
            print("waiting", flush=True)
            time.sleep(float(sys.argv[1]))
            """)
        with McpProcess("--name", "fast", PY, fast, "{seconds}") as server:
            server.initialize()
            server.call("fast", {"seconds": "0"})  # the client set no level: no log lines
            self.assertEqual(server.notifications_of("notifications/message"), [])
            server.request("logging/setLevel", {"level": "info"})
            started = time.monotonic()
            server.call("fast", {"seconds": "0"})
            elapsed = time.monotonic() - started
            logs = [n["params"] for n in server.notifications_of("notifications/message") if n["params"]["logger"] == "fast"]
            self.assertLessEqual(len(logs), elapsed / mcpstudio.FEED_INTERVAL + 2)
            self.assertTrue(all(len(line) <= mcpstudio.FEED_LINE for entry in logs for line in entry["data"].split("\n")))
            self.assertTrue(all(entry["data"].count("\n") < mcpstudio.FEED_LINES for entry in logs))
            self.assertTrue(all(re.match(r"line \d+ z+(\.\.\.)?$|waiting$", line) for entry in logs
                                for line in entry["data"].split("\n")), logs[:3])
            task = server.request("tools/call", {"name": "fast", "arguments": {"seconds": "30"}, "task": {"ttl": 60000}})
            task_id = task["result"]["task"]["taskId"]
            self.assertTrue(wait_until(lambda: server.request("tasks/get", {"taskId": task_id})["result"].get(
                "statusMessage") == "waiting"), server.context())
            server.request("tasks/cancel", {"taskId": task_id})

class FileArgumentTests(ScratchDir):
    def test_write_file_argument_table(self):
        # A data: URI becomes a file in the folder, named by its `;name=` (made safe) or the parameter.
        png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
        encoded = base64.b64encode(png).decode()
        for value, name in (("data:image/png;name=cat.png;base64," + encoded, "cat.png"),
                            ("data:image/png;base64," + encoded, "picture"),
                            ("data:;name=../../etc/passwd;base64," + encoded, "passwd"),
                            ("data:image/png;name=..;base64," + encoded, "picture"),
                            ("data:application/octet-stream;name=a%20b$c;base64," + encoded, "a_20b_c"),
                            ("data:;name=-rf;base64," + encoded, "rf"), ("data:;name=.-.bashrc;base64," + encoded, "bashrc"),
                            ("data:;name=--;base64," + encoded, "picture"),
                            ("data:;name=%s.png;base64," % ("n" * 300) + encoded, "n" * 96 + ".png")):
            folder = tempfile.mkdtemp(dir=self.dir)
            path = mcpstudio.write_file_argument("picture", value, folder, 1000)
            self.assertEqual(path, os.path.join(folder, "picture", name), value[:40])
            with open(path, "rb") as f:
                self.assertEqual(f.read(), png)
        for value, problem in (("nope", "data: URI"), ("data:image/png;base64,@@@", "data: URI"),
                               ("data:text/plain,hello", "data: URI"), ("data:;base64," + encoded, "more than the 100"),
                               ("data:" + "a" * 2000 + ";base64,QQ==", "data: URI"), ("data:;base64", "data: URI")):
            with self.assertRaisesRegex(mcpstudio.ToolError, problem):
                mcpstudio.write_file_argument("picture", value, self.dir, 100)

    def test_files_in_and_out(self):
        # A PNG given as a data URI reaches the command as a file with the same bytes, in a private folder
        # removed after the call; a PNG the command writes into its output folder comes back as image content.
        png = b"\x89PNG\r\n\x1a\n" + os.urandom(300)
        digest = self.script("digest.py", """\
            import hashlib, os, sys
            folder = os.path.dirname(os.path.dirname(sys.argv[1]))
            print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest(), sys.argv[1], oct(os.stat(folder).st_mode & 0o777))
            """)
        draw = self.script("draw.py", """\
            import os, sys
            with open(os.path.join(sys.argv[1], "plot.png"), "wb") as f:
                f.write(bytes.fromhex(sys.argv[2]))
            with open(os.path.join(sys.argv[1], "notes.txt"), "w") as f:
                f.write("drawn\\n")
            """)
        config = os.path.join(self.dir, "files.json")
        with open(config, "w") as f:
            json.dump({"tools": [
                {"name": "digest", "command_template": "%s %s {image}" % (PY, digest),
                 "parameters": {"image": {"type": "file", "description": "A picture"}}},
                {"name": "draw", "command": "%s %s {out} {hex}" % (PY, draw), "output_folder": "out"}]}, f)
        with McpProcess("serve", "--config", config) as server:
            server.initialize()
            tools = {t["name"]: t["inputSchema"] for t in server.request("tools/list")["result"]["tools"]}
            self.assertEqual(tools["digest"]["properties"]["image"]["type"], "string")
            self.assertIn("data:", tools["digest"]["properties"]["image"]["description"])
            self.assertEqual(list(tools["draw"]["properties"]), ["hex"])
            result = server.call("digest", {"image": "data:image/png;name=in.png;base64," + base64.b64encode(png).decode()})
            sha, path, mode = result["content"][0]["text"].split()
            self.assertEqual(sha, hashlib.sha256(png).hexdigest())
            self.assertEqual((os.path.basename(path), mode), ("in.png", "0o700"))
            self.assertFalse(os.path.exists(os.path.dirname(os.path.dirname(path))))
            bad = server.call("digest", {"image": "/etc/passwd"})
            self.assertTrue(bad["isError"])
            self.assertIn("`image` is a file", text_of(bad))
            result = server.call("draw", {"hex": png.hex()})
            self.assertFalse(result["isError"], result)
            self.assertIn({"type": "image", "data": base64.b64encode(png).decode(), "mimeType": "image/png"},
                          result["content"])
            self.assertIn({"type": "text", "text": "drawn\n"}, result["content"])

    def test_output_folder_has_one_budget(self):
        # Issue 41.5: every file of an output folder up to the per-file limit came back (a 125 KiB archive unpacked
        # cost 480 MiB): the files together stay within --max-output and OUTPUT_FOLDER_FILES, the result says
        # which were left out, and a link or a hard link to a file outside is never read.
        fill = self.script("fill.py", """\
            import os, sys
            out, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
            for number in range(count):
                with open(os.path.join(out, "f%03d.bin" % number), "wb") as f:
                    f.write(os.urandom(size))
            os.symlink(sys.argv[4], os.path.join(out, "link.txt"))
            os.link(sys.argv[4], os.path.join(out, "hard.txt"))
            if sys.argv[5:]:
                with open(os.path.join(out, sys.argv[5]), "wb") as f:
                    f.write(bytes(range(256)))
            """)
        secret = os.path.join(self.dir, "secret.txt")
        with open(secret, "w") as f:
            f.write("do not show 7355608\n")
        config = os.path.join(self.dir, "out.json")
        with open(config, "w") as f:
            json.dump({"tools": [{"name": "fill", "command": "%s %s {out} {count} {size} %s [name]" % (PY, fill, secret),
                                  "output_folder": "out", "parameters": {"count": {"type": "integer"},
                                                                        "size": {"type": "integer"},
                                                                        "name": {"type": "string", "required": False}}}]}, f)
        with McpProcess("serve", "--config", config) as server:
            server.initialize()
            result = server.call("fill", {"count": 30, "size": 100000})
            blobs = [item for item in result["content"] if item["type"] == "resource"]
            self.assertEqual(len(blobs), 10)  # 10 x 100,000 bytes fit in 1 MiB, the 11th does not
            self.assertEqual([item["text"] for item in result["content"][-2:]], [
                "[output folder: 20 not shown, past the %d files and %d bytes together a result shows (--max-output): "
                "\"f010.bin\", \"f011.bin\", \"f012.bin\", \"f013.bin\", \"f014.bin\", \"f015.bin\", \"f016.bin\", "
                "\"f017.bin\", \"f018.bin\", \"f019.bin\" and 10 more]" % (mcpstudio.OUTPUT_FOLDER_FILES, 1 << 20),
                "[output folder: 2 not shown, not plain files (links, folders, hard links are never read): "
                "\"hard.txt\", \"link.txt\"]"])
            self.assertNotIn("7355608", json.dumps(result))
            named = server.call("fill", {"count": 0, "size": 1, "name": "a\x1b[2Jb\u202e.bin"})
            self.assertEqual([item["resource"]["uri"] for item in named["content"] if item["type"] == "resource"],
                             ["mcpstudio://fill/a%1B%5B2Jb%E2%80%AE.bin"])  # percent-encoded, never raw
            many = server.call("fill", {"count": 50, "size": 10})
            self.assertEqual(len([item for item in many["content"] if item["type"] == "resource"]),
                             mcpstudio.OUTPUT_FOLDER_FILES)
            self.assertIn("[output folder: 32 not shown, past the", many["content"][-1]["text"])

    @unittest.skipUnless(mcpstudio._POSIX, "process groups and SIGTERM")
    def test_output_folder_is_read_once_the_commands_group_is_gone(self):
        # Issue 41.12: the output folder was read as soon as the command exited, while a process it left behind
        # (stopped with SIGTERM, which it ignores, then killed) could still change it: it is read once the group is
        # gone, so what that process wrote is what the result shows.
        late = self.script("late.py", """\
            import os, signal, sys, time
            if os.fork() == 0:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                time.sleep(0.5)
                with open(os.path.join(sys.argv[1], "late.txt"), "w") as f:
                    f.write("late\\n")
                os._exit(0)
            with open(os.path.join(sys.argv[1], "main.txt"), "w") as f:
                f.write("main\\n")
            """, executable=False)
        config = os.path.join(self.dir, "late.json")
        with open(config, "w") as f:
            json.dump({"tools": [{"name": "late", "command": "%s %s {out}" % (PY, late), "output_folder": "out"}]}, f)
        with McpProcess("serve", "--config", config) as server:
            server.initialize()
            result = server.call("late", {})
        self.assertEqual([item.get("text") for item in result["content"][-2:]], ["late\n", "main\n"], result)

    def test_input_file_names_are_neither_options_nor_too_long(self):
        # Issue 41.19: `name=-rf` reached the command as a file named `-rf`, and a 300-character name was an
        # internal error quoting the private folder's path: no leading dash, a long name cut, the file written.
        show = self.script("show.py", "import os, sys\nprint(os.path.basename(sys.argv[1]))\n", False)
        config = os.path.join(self.dir, "files.json")
        with open(config, "w") as f:
            json.dump({"tools": [{"name": "show", "command_template": "%s %s {doc}" % (PY, show),
                                  "parameters": {"doc": {"type": "file"}}}]}, f)
        with McpProcess("serve", "--config", config) as server:
            server.initialize()
            for name, expected in (("-rf", "rf"), ("x" * 300, "x" * 100), (".profile", "profile")):
                result = server.call("show", {"doc": "data:text/plain;name=%s;base64,aGk=" % name})
                self.assertEqual(text_of(result), expected + "\n", result)

    @unittest.skipUnless(mcpstudio._POSIX, "the per-user parent is named by the uid")
    def test_call_folders_of_a_killed_server_are_swept(self):
        # Issue 41.14: per-call folders outlived a killed server and nothing swept them: they live under one per-user
        # parent, named by the server's pid, and a start removes those of servers that are gone.
        tmp = os.path.join(self.dir, "tmp")
        os.mkdir(tmp)
        parent = os.path.join(tmp, "mcpstudio-%d" % os.getuid())
        os.mkdir(parent, 0o700)
        gone = subprocess.Popen([PY, "-c", "pass"])
        gone.wait()
        for name in ("%d-dead" % gone.pid, "%d-live" % os.getpid()):
            os.makedirs(os.path.join(parent, name, "doc"))
        pid_file = os.path.join(self.dir, "stall.pid")
        stall = self.script("stall.py", "import os, sys, time\nopen(%r, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
                            % pid_file, False)
        config = os.path.join(self.dir, "files.json")
        with open(config, "w") as f:
            json.dump({"tools": [{"name": "stall", "command_template": "%s %s {doc}" % (PY, stall),
                                  "parameters": {"doc": {"type": "file"}}, "timeout": 60}]}, f)
        env = dict(os.environ, TMPDIR=tmp)
        with McpProcess("serve", "--config", config, env=env) as server:
            server.initialize()
            self.assertEqual(sorted(os.listdir(parent)), ["%d-live" % os.getpid()])  # the dead one's swept
            server.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
                "name": "stall", "arguments": {"doc": "data:;name=a.txt;base64,aGk="}}})
            self.assertTrue(wait_until(lambda: len(os.listdir(parent)) == 2), os.listdir(parent))
            mine, = [name for name in os.listdir(parent) if name.startswith("%d-" % server.proc.pid)]
            self.assertTrue(wait_until(lambda: os.path.exists(pid_file)))
            server.proc.kill()  # no chance to remove its folder
            server.proc.wait(WAIT)
        self.assertTrue(os.path.isdir(os.path.join(parent, mine)))
        with open(pid_file) as f:
            stalled = int(f.read())
        if not wait_until(lambda: not alive(stalled), 10):  # the watchdog ends it; never leave it running
            os.kill(stalled, signal.SIGKILL)
            self.fail("the killed server's command outlived it")
        with McpProcess("serve", "--config", config, env=env) as server:
            server.initialize()
            self.assertEqual(sorted(os.listdir(parent)), ["%d-live" % os.getpid()])

    def test_hostile_data_uri_is_linear(self):
        # Issue 41.1: a 1 MB data: URI of many `;a` parameters (no comma, or one at the very end) is refused at
        # once, and the server keeps answering; the backtracking pattern it replaced took hours on it.
        config = os.path.join(self.dir, "files.json")
        with open(config, "w") as f:
            json.dump({"tools": [{"name": "digest", "command_template": "cat {image}",
                                  "parameters": {"image": {"type": "file"}}}]}, f)
        with McpProcess("serve", "--config", config) as server:
            server.initialize()
            for value in ("data:" + ";a" * 500000, "data:" + ";a" * 500000 + ",x", "data:;name=" + ";a" * 500000
                          + ";base64,QQ=="):
                started = time.monotonic()
                result = server.call("digest", {"image": value}, timeout=10)
                self.assertLess(time.monotonic() - started, 5, value[:20])
                self.assertTrue(result["isError"], result)
                self.assertIn("`image` is a file", text_of(result))
            # a value too large for the limit is refused by its length, before it is decoded
            result = server.call("digest", {"image": "data:;base64," + "A" * (4 << 20)}, timeout=10)
            self.assertIn("more than the %d a file may have" % (1 << 20), text_of(result))
            self.assertIn("result", server.request("ping", timeout=5))

    def test_resource_uri_as_file(self):
        # A file parameter's value may be a resource URI of this server: a kept output of the same session is read
        # through resources/read and reaches the command as a file with the output's bytes.
        digest = self.script("digest.py", """\
            import hashlib, sys
            print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest(), sys.argv[1])
            """)
        config = os.path.join(self.dir, "files.json")
        with open(config, "w") as f:
            json.dump({"tools": [
                {"name": "digest", "command_template": "%s %s {log}" % (PY, digest),
                 "parameters": {"log": {"type": "file"}}},
                {"name": "count", "command": "seq 1 {n}", "max_text": 2000}]}, f)
        whole = "".join("%d\n" % number for number in range(1, 5001)).encode()
        with McpProcess("serve", "--config", config) as server:
            server.initialize()
            uri, = [item["uri"] for item in server.call("count", {"n": 5000})["content"] if item["type"] == "resource_link"]
            sha, path = text_of(server.call("digest", {"log": uri})).split()
            self.assertEqual((sha, os.path.basename(path)), (hashlib.sha256(whole).hexdigest(), uri.rpartition("/")[2]))
            sha, _ = text_of(server.call("digest", {"log": uri + "?lines=2-3"})).split()
            self.assertEqual(sha, hashlib.sha256(b"2\n3\n").hexdigest())
            missing = server.call("digest", {"log": "mcpstudio://output/" + "0" * 32})
            self.assertTrue(missing["isError"])
            self.assertIn("`log`: mcpstudio://output/%s cannot be read: Output not found" % ("0" * 32), text_of(missing))


    def test_resource_uri_as_file_is_read_inside_the_guard(self):
        # Issue 41.6: a resource URI given as a file was read before the confirmation (a refused call still ran the
        # resource's command), and any resource of the server could be read so: now it is read as the call runs,
        # the confirmation names the URI, and only kept outputs are read unless the tool sets `file_resources`.
        marker = os.path.join(self.dir, "read")
        notes = self.script("notes.py", """\
            import sys
            open(sys.argv[1], "a").write("x")
            print("secret notes")
            """)
        config = os.path.join(self.dir, "files.json")
        with open(config, "w") as f:
            json.dump({"resources": [{"uri": "notes://today", "name": "notes", "command": "%s %s %s" % (PY, notes, marker)}],
                       "tools": [{"name": "ask", "command_template": "cat {log}", "confirm": True,
                                  "parameters": {"log": {"type": "file"}}},
                                 {"name": "plain", "command_template": "cat {log}", "parameters": {"log": {"type": "file"}}},
                                 {"name": "opted", "command_template": "cat {log}", "file_resources": True,
                                  "parameters": {"log": {"type": "file"}}}]}, f)
        with McpProcess("serve", "--config", config) as server:
            server.initialize()  # no elicitation: a confirmed tool is refused
            for _ in range(3):
                refused = server.call("ask", {"log": "notes://today"})
                self.assertIn("needs the user's confirmation", text_of(refused))
            plain = server.call("plain", {"log": "notes://today"})
            self.assertTrue(plain["isError"])
            self.assertIn("`log`: notes://today cannot be read: a file may be a kept output of this server", text_of(plain))
            self.assertFalse(os.path.exists(marker))  # the resource's command never ran
            self.assertEqual(text_of(server.call("opted", {"log": "notes://today"})), "secret notes\n")
            self.assertTrue(os.path.exists(marker))
        with McpProcess("serve", "--config", config) as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                          "clientInfo": {"name": "t", "version": "0"}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                         "params": {"name": "ask", "arguments": {"log": "notes://today"}}})
            self.assertTrue(wait_until(lambda: server.notifications_of("elicitation/create")), server.context())
            asked = server.notifications_of("elicitation/create")[0]
            self.assertIn("notes://today", asked["params"]["message"])
            server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}})
            self.assertTrue(server.wait_response(7)["result"]["isError"])
        with open(marker) as f:
            self.assertEqual(f.read(), "x")  # once, for `opted`


class CorePromiseTests(ScratchDir):
    """Issue 33: ten ways a model's value became code, an option, a file or a command; each is refused
    when the config loads or when the call comes, and nothing runs (a marker file never appears)."""

    # (hole, tool, fragment of the reason): each loads no tool; the field is always `x`
    AT_START = [
        (1, {"shell": True, "command": "trap {x} EXIT; echo hi"}, "`trap`"),
        (1, {"shell": True, "command": "alias {x}\nls"}, "`alias`"),
        (1, {"shell": True, "command": "echo a; PROMPT_COMMAND={x}"}, "`PROMPT_COMMAND=`"),
        (1, {"shell": True, "command": "echo a; fc -s {x}"}, "`fc`"),
        (1, {"shell": True, "command": "bind -x {x}"}, "`bind`"),
        (1, {"shell": True, "command": "complete -C {x} ls"}, "`complete`"),
        (1, {"shell": True, "command": "echo ${v:{x}}"}, "arithmetic"),
        (1, {"shell": True, "command": "for ((i={x}; i<3; i++)); do echo $i; done"}, "arithmetic"),
        (1, {"shell": True, "command": "echo a; printf -v {x} %s 1"}, "`printf -v`"),
        (1, {"shell": True, "command": "echo a; test -v {x}"}, "`test -v`"),
        (1, {"shell": True, "command": "echo a; read {x}"}, "`read`"),
        (1, {"shell": True, "command": "echo a; mapfile -C {x} lines"}, "`mapfile`"),
        (2, {"shell": True, "command": "echo {x} | sh"}, "`sh` reads the program"),
        (2, {"shell": True, "command": "printf '%s\\n' {x} | sh -s"}, "`sh` reads the program"),
        (2, {"shell": True, "command": "sh <<EOF\necho {x}\nEOF"}, "`sh` reads the program"),
        (2, {"shell": True, "command": "echo {x} | xargs touch"}, "`xargs` turns stdin into arguments"),
        (2, {"shell": True, "command": "sh < {x}"}, "`sh` reads the program"),
        (2, {"shell": True, "command": "echo {x} |& bash"}, "`bash` reads the program"),
        (3, {"command": "env --split={x}"}, "`env --split-string`"),
        (3, {"command": "env --sp={x}"}, "`env --split-string`"),
        (3, {"command": "sed -n --expr={x} file"}, "`sed --expression`"),
        (3, {"command": "timeout --sig KILL 5 awk {x}"}, "`awk` runs as its program"),
        (3, {"command": "awk -W interactive {x}"}, "`awk` runs as its program"),
        (3, {"command": "env --frobnicate ls {x}"}, "an option of `env` that mcpstudio does not know"),
        (4, {"command": "flock LOCKFILE awk {x}"}, "`awk` runs as its program"),
        (4, {"command": "flock LOCKFILE sed -n {x} file"}, "`sed` runs as its program"),
        (4, {"command": "docker exec c awk {x}"}, "`awk` runs as its program"),
        (4, {"command": "kubectl exec p -- sed {x}"}, "`sed` runs as its program"),
        (7, {"command": "rbash -c {x}"}, "`rbash -c`"),
        (7, {"command": "oksh -c {x}"}, "`oksh -c`"),
        (7, {"command": "sqlite3 db {x}"}, "`sqlite3` runs as SQL"),
        (7, {"command": "sqlite3 db", "stdin": "{x}"}, "`sqlite3` reads the program"),
        (7, {"command": "make -f -", "stdin": "{x}"}, "`make -f` reads the program"),
        (7, {"command": "make CFLAGS={x}"}, "`make NAME=VALUE`"),
        (7, {"command": "sh /dev/fd//0", "stdin": "{x}"}, "`sh` reads the program"),
        (7, {"command": "sh /dev/./stdin", "stdin": "{x}"}, "`sh` reads the program"),
        (7, {"command": "ex -s file", "stdin": "{x}"}, "`ex` reads the program"),
        (7, {"command": "vim +{x} file"}, "`vim +`"),
        (7, {"command": "view -c {x} file"}, "`view -c`"),
        (7, {"command": "tcsh -c {x}"}, "`tcsh -c`"),
        (7, {"command": "csh -c {x}"}, "`csh -c`"),
        (7, {"command": "nu -c {x}"}, "`nu -c`"),
        (7, {"command": "xonsh -c {x}"}, "`xonsh -c`"),
        (7, {"command": "elvish -c {x}"}, "`elvish -c`"),
        (7, {"command": "ipython -c {x}"}, "`python -c`"),
        (7, {"command": "gdb -batch -ex {x}"}, "`gdb -ex`"),
        (7, {"command": "script -q -c {x} /dev/null"}, "`script -c`"),
        (7, {"command": "flock -c {x} LOCKFILE"}, "`flock -c`"),
        (7, {"command": "flock LOCKFILE -c {x}"}, "`flock -c`"),
        (8, {"command": "git clone --upload-pack={x} repo"}, "`git clone --upload-pack`"),
        (8, {"command": "git push --receive-pack {x} origin"}, "`git push --receive-pack`"),
        (8, {"command": "git submodule foreach {x}"}, "`git submodule foreach`"),
        (8, {"command": "git bisect run {x}"}, "`git bisect run`"),
        (8, {"command": "git rebase -x {x} main"}, "`git rebase -x`"),
        (8, {"command": "git difftool -x {x}"}, "`git difftool -x`"),
        (8, {"command": "git --config-env={x} log"}, "--config-env`"),
        (8, {"command": "find . -fprint {x}"}, "`find -fprint`"),
        (8, {"command": "find . -name a -fprintf {x} %p"}, "`find -fprintf`"),
        (8, {"command": "find . -fls {x}"}, "`find -fls`"),
        (8, {"command": "tar --to-command={x} -xf a.tar"}, "`tar --to-command`"),
        (8, {"command": "zip -TT {x} a.zip file"}, "`zip -TT`"),
        (8, {"command": "wget -O {x} https://example.com/"}, "`wget -O`"),
        (8, {"command": "curl -sSLo {x} https://example.com/"}, "`curl -o`"),
        (8, {"command": "rsync -avze {x} a host:b"}, "`rsync -e`"),
        (8, {"command": "curl -K {x} https://example.com/"}, "`curl -K`"),
        (8, {"command": "bash --rcfile {x} -i"}, "`bash --rcfile`"),
        (8, {"shell": True, "command": "source <(echo {x})"}, "`source` reads the program"),
        (8, {"shell": True, "command": "echo {x} | ed -s file"}, "`ed` reads the program"),
        (8, {"command": "gdb --args sh -c {x}"}, "`sh -c`"),
        (8, {"command": "psql -c {x}"}, "`psql -c`"),
        (8, {"command": "mysql -e {x}"}, "`mysql -e`"),
        (8, {"command": "sftp -b {x} host"}, "`sftp -b`"),
        (8, {"command": "curl -T {x} https://example.com/"}, "`curl -T`"),
        (8, {"command": "git format-patch -o {x} HEAD~1"}, "`git format-patch -o`"),
        (8, {"command": "make -C {x}"}, "`make -C`"),
        (8, {"command": "node --env-file={x} app.js"}, "`node --env-file`"),
        (8, {"command": "Rscript -e {x}"}, "`r -e`"),
        (8, {"command": "php -d {x} a.php"}, "`php -d`"),
        (8, {"command": "npx -c {x}"}, "`npx -c`"),
        (8, {"command": "emacs --batch --eval {x}"}, "`emacs --eval`"),
        (10, {"command": "env TAR_OPTIONS={x} tar -cf a.tar file"}, "`TAR_OPTIONS=`"),
        (10, {"shell": True, "command": "echo a; http_proxy={x} curl https://example.com/"}, "`http_proxy=`"),
    ]
    STILL_LOADS = [  # the same programs with values as data
        "ex -s {file}", "view -es {file}", "git log {rev}", "git cherry-pick -x {commit}", "git log -c {path}",
        "make {target}", "sqlite3 {db} 'select 1'", "env --ignore-environment ls {x}", "env --chdir=x ls {x}",
        "env x={v} printenv x", "flock LOCKFILE ls {x}", "grep -rn read {x}", "gdb -batch -ex run --args ./p {x}", "go test -v {x}",
        "bash --norc x.sh {x}", "make -j 4 {target}", "tar -xf {archive} -C out", "psql -d {db} -c 'select 1'",
        "curl -o out.html {url}", "curl -fsSL {url}", "wget -qO- {url}", "rsync -avz {src} {dst}",
    ]

    def check(self, tool):
        path = os.path.join(self.dir, "c.json")
        with open(path, "w") as f:
            json.dump({"tools": [dict(tool, name="t")]}, f)
        return subprocess.run(SERVER + ["check", "--config", path], capture_output=True, text=True, timeout=WAIT,
                              stdin=subprocess.DEVNULL, cwd=self.dir)

    def test_refused_when_the_config_loads(self):
        # Every form, in-process: the message names the field and the reason; the data forms still load.
        for hole, tool, reason in self.AT_START:
            with self.subTest(hole=hole, tool=tool):
                with self.assertRaises(TemplateError) as cm:
                    template = mcpstudio.CommandTemplate(tool["command"], shell=tool.get("shell", False))  # as loaded
                    template.check_code(shell=tool.get("shell", False))
                    if "stdin" in tool and template.stdin_code:
                        raise TemplateError(template.stdin_code)
                self.assertIn(reason, str(cm.exception))
                if "stdin" not in tool:
                    self.assertIn("`x`", str(cm.exception))
        for text in self.STILL_LOADS:
            with self.subTest(template=text):
                mcpstudio.CommandTemplate(text).check_code(shell=False)
        # One of each hole through the program: `check` stops with exit 1 naming the tool, field and reason.
        seen = set()
        for hole, tool, reason in self.AT_START:
            if hole in seen:
                continue
            seen.add(hole)
            with self.subTest(hole=hole, spawned=tool):
                out = self.check(tool)
                self.assertEqual(out.returncode, 1, out.stderr)
                self.assertIn("tools[0].%s" % ("stdin" if "stdin" in tool else "command"), out.stderr)
                self.assertIn(reason, out.stderr)
                if "stdin" not in tool:
                    self.assertIn("`x`", out.stderr)
        self.assertEqual(seen, {1, 2, 3, 4, 7, 8, 10})

    # Issue 41.22: options of coreutils, findutils and util-linux programs that run a command or write a file, and
    # their commands that run a command; (template, fragment of the reason)
    MORE_AT_START = [
        ("sort --compress-program={x} big.txt", "`sort --compress-program`"),
        ("sort -S 1G --compress-prog {x} big.txt", "`sort --compress-program`"),
        ("sort -o {x} list.txt", "`sort -o`"), ("split --filter={x} big.txt", "`split --filter`"),
        ("install -s --strip-program {x} a b", "`install --strip-program`"), ("shuf -o {x} list.txt", "`shuf -o`"),
        ("dd if=a of={x}", "`dd of`"), ("less +{x} notes.txt", "`less +`"), ("mount -t {x} dev dir", "`mount -t`"),
        ("taskset 1 {x}", "the command to run"), ("taskset -c 0 {x}", "the command to run"),
        ("chrt -f 10 {x}", "the command to run"), ("unshare -r {x}", "the command to run"),
        ("nsenter -t 1 -m {x}", "the command to run"), ("setarch x86_64 -R {x}", "the command to run"),
        ("setpriv --nnp {x}", "the command to run"), ("runcon -t t {x}", "the command to run"),
        ("taskset 1 sh -c {x}", "`sh -c`"),
    ]
    MORE_STILL_LOADS = ["sort -n {file}", "sort -o sorted.txt {file}", "split -l 10 {file}", "taskset -c 0 ls {x}",
                        "chrt -f 10 ls {x}", "unshare -r ls {x}", "dd if={x} of=out", "less {file}",
                        "nsenter -t 1 -m ls {x}", "runcon -t t ls {x}", "setarch x86_64 -R ls {x}"]

    def test_more_programs_that_run_a_command(self):
        # Issue 41.22: each of MORE_AT_START is refused when the config loads (in-process, and two through `check`),
        # and the same programs with values as data still load.
        for text, reason in self.MORE_AT_START:
            with self.subTest(template=text):
                with self.assertRaises(TemplateError) as cm:
                    mcpstudio.CommandTemplate(text)
                self.assertIn(reason, str(cm.exception))
                self.assertIn("`x`", str(cm.exception))
        for text in self.MORE_STILL_LOADS:
            with self.subTest(template=text):
                mcpstudio.CommandTemplate(text)
        for text, reason in self.MORE_AT_START[:1] + self.MORE_AT_START[-9:-8]:  # through the program
            with self.subTest(spawned=text):
                out = self.check({"command": text})
                self.assertEqual(out.returncode, 1, out.stderr)
                self.assertIn(reason, out.stderr)

    def test_a_value_written_to_a_file_the_script_runs_is_code(self):
        # Issue 41.21: `echo {x} > p.sh; sh p.sh` loaded, and the value ran as a script: a field's value redirected
        # (or piped through tee) into a file that a later command runs as code is refused; a file read as data loads.
        for text, file in (("echo {x} > p.sh; sh p.sh", "p.sh"), ("printf %s {x} >> p.awk; awk -f p.awk data", "p.awk"),
                           ("echo {x} | tee p.py; python3 p.py", "p.py"), ("echo {x} | cat > lib.sh\n. ./lib.sh", "./lib.sh"),
                           ("echo {x} > s.sed; sed -f s.sed notes.txt", "s.sed")):
            with self.subTest(template=text):
                with self.assertRaises(TemplateError) as cm:
                    mcpstudio.CommandTemplate(text, shell=True).check_code(shell=True)
                self.assertIn("`x` is written to `%s`, which a later command runs as code" % file, str(cm.exception))
        for text in ("echo {x} > data.txt; cat data.txt", "echo hi > p.sh; sh p.sh {x}", "echo {x} 2>&1; sh p.sh"):
            mcpstudio.CommandTemplate(text, shell=True).check_code(shell=True)
        out = self.check({"shell": True, "command": "echo {x} > p.sh; sh p.sh"})
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("`x` is written to `p.sh`, which a later command runs as code", out.stderr)

    def test_a_literal_trap_action_loads_and_runs(self):
        # Issue 41.23: `trap 'echo bye' EXIT; echo {x}` was refused at startup (the script was also walked as one
        # command, where `{x}` followed `trap`): it loads and runs, the value as data; a field in the action is
        # still refused.
        marker = os.path.join(self.dir, "MARKER")
        path = os.path.join(self.dir, "trap.json")
        with open(path, "w") as f:
            json.dump({"tools": [{"name": "bye", "shell": True, "command": "trap 'echo bye' EXIT; echo {x}"}]}, f)
        with McpProcess("serve", "--config", path, cwd=self.dir) as server:
            server.initialize()
            result = server.call("bye", {"x": "$(touch MARKER)"})
            self.assertEqual(text_of(result), "$(touch MARKER)\nbye\n", result)
        self.assertFalse(os.path.exists(marker))
        out = self.check({"shell": True, "command": "trap \"echo {x}\" EXIT; true"})
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("`x` stands inside code that `trap` runs", out.stderr)

    def test_refused_when_called(self):
        # Holes 5, 6 and 7 (`ex -s {file}`): the dash guard judges each word as rendered, a wrapper's `--`
        # frees nothing, and a vi-family file may not start with `+`; each value would write the marker.
        marker = os.path.join(self.dir, "MARKER")
        tools = [
            {"name": "joined", "command": "sort {a}-{b}", "parameters": {"a": {"type": "string"}, "b": {"type": "string"}}},
            {"name": "optional", "command": "sort [a]-{b}"},
            {"name": "wrapper", "command": "env -- sort {b}"},
            {"name": "wrapper_shell", "shell": True, "command": "nice -- sort {b} | cat"},
            {"name": "vi", "command": "ex -s {b}"},
            {"name": "curl", "command": "curl -s -d {b} http://127.0.0.1:9/"},
        ]
        path = os.path.join(self.dir, "tools.json")
        with open(path, "w") as f:
            json.dump({"tools": tools}, f)
        attacks = [("joined", {"a": "", "b": "-output=MARKER"}, "'-'"), ("optional", {"b": "-output=MARKER"}, "'-'"),
                   ("wrapper", {"b": "--output=MARKER"}, "'-'"), ("wrapper_shell", {"b": "--output=MARKER"}, "'-'"),
                   ("vi", {"b": "+!touch MARKER"}, "'+'"), ("curl", {"b": "@" + marker}, "'@'")]
        with McpProcess("serve", "--config", path, cwd=self.dir) as server:
            server.initialize()
            for tool, arguments, sign in attacks:
                with self.subTest(tool=tool):
                    result = server.call(tool, arguments)
                    self.assertTrue(result["isError"], text_of(result))
                    self.assertIn("`b` starts with %s" % sign, text_of(result))
            # The same words with harmless values run.
            self.assertNotIn("starts with", text_of(server.call("joined", {"a": "v", "b": "x"})))
            self.assertNotIn("starts with", text_of(server.call("wrapper", {"b": "nothing-here"})))
        self.assertFalse(os.path.exists(marker))

    def test_pure_parts_table(self):
        # getopt_long's unique prefixes; the guard on words as rendered; which variables steer.
        known = ("--unset", "--chdir", "--split-string", "--signal")
        for name, expected in (("--sp", "--split-string"), ("--split-string", "--split-string"), ("--s", "--s"),
                               ("--u", "--unset"), ("--frob", "--frob"), ("--", "--")):
            self.assertEqual(mcpstudio._long_option(name, known), expected, name)
        rows = [  # template, arguments, refused
            ("x {a}-{b}", {"a": "", "b": "-o"}, True), ("x {a}-{b}", {"a": "v", "b": "-o"}, False),
            ("x [a]-{b}", {"b": "-o"}, True), ("x [--voice={v}]", {"v": "-a"}, False), ("x -e{p}", {"p": "-a"}, False),
            ("env -- x {b}", {"b": "-o"}, True), ("x -- {b}", {"b": "-o"}, False), ("x -- a {b}", {"b": "-o"}, True),
            ("vim {f}", {"f": "+!id"}, True), ("vim -- {f}", {"f": "+!id"}, False), ("cat {f}", {"f": "+x"}, False),
            ("curl -d {d} u", {"d": "@/etc/passwd"}, True), ("curl -d @{d} u", {"d": "f"}, False),
        ]
        for text, arguments, refused in rows:
            with self.subTest(template=text, arguments=arguments):
                if refused:
                    with self.assertRaises(ToolError):
                        mcpstudio.CommandTemplate(text).render(arguments)
                else:
                    mcpstudio.CommandTemplate(text).render(arguments)
        for name, steers in (("x", False), ("max_count", False), ("X", True), ("PS4", True), ("ftp_proxy", True),
                             ("npm_config_userconfig", True), ("module_path", True), ("a-b", True)):
            self.assertEqual(mcpstudio._steers(name), steers, name)

    @unittest.skipUnless(shutil.which("git"), "git is not installed")
    def test_git_example_runs_no_configured_program(self):
        # Hole 9: a downloaded folder's .git/config names core.fsmonitor; examples/configs/git.json's
        # read-only git_status does not run it (git without the -c settings does, shown first).
        marker = os.path.join(self.dir, "MARKER")
        repo = os.path.join(self.dir, "project")
        subprocess.run(["git", "init", "-q", repo], check=True, timeout=WAIT)
        subprocess.run(["git", "-C", repo, "config", "core.fsmonitor", "touch %s; false" % marker], check=True,
                       timeout=WAIT)
        subprocess.run(["git", "-C", repo, "status", "--short"], capture_output=True, timeout=WAIT)
        self.assertTrue(os.path.exists(marker), "the attack needs a git that runs core.fsmonitor")
        os.remove(marker)
        with McpProcess("serve", "--config", os.path.join(HERE, "examples", "configs", "git.json")) as server:
            server.initialize()
            result = server.call("git_status", {"repo": repo})
            self.assertFalse(result["isError"], text_of(result))
            self.assertIn("##", text_of(result))
        self.assertFalse(os.path.exists(marker))

    @unittest.skipUnless(shutil.which("tar") and os.name == "posix", "needs tar and POSIX")
    def test_script_options_that_steer_a_program_are_not_set_by_name(self):
        # Hole 10: a script declares options named like variables programs act on; its plain `tar`
        # would run TAR_OPTIONS's checkpoint action. Only lower-case names outside the known list
        # (proxies, npm_config_*, zsh's path) are set under their own names; all arrive as MCPD_OPT_.
        root = os.path.join(self.dir, "scripts")
        os.makedirs(root)
        marker = os.path.join(self.dir, "MARKER")
        names = ["TAR_OPTIONS", "ZIPOPT", "VIMINIT", "LUA_INIT", "MAKEFLAGS", "CC", "GOFLAGS", "KUBECONFIG",
                 "http_proxy", "npm_config_script_shell", "fpath", "who"]
        script = os.path.join(root, "probe")
        with open(script, "w") as f:
            f.write(textwrap.dedent("""\
                #!%s
                import json, os, subprocess, sys
                if sys.argv[1:] == ["--help"]:
                    print("{}")
                    print(json.dumps({n: {"required": True, "value_type": "string"} for n in %r}), file=sys.stderr)
                    sys.exit(0)
                open("file", "w").close()
                subprocess.run(["tar", "-cf", "a.tar", "file"])
                print(json.dumps({"own": {n: os.environ.get(n) for n in %r},
                                  "opt": {n: os.environ.get("MCPD_OPT_" + n) for n in %r}}))
                """ % (PY, names, names, names)))
        os.chmod(script, 0o755)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        for name in names:
            env.pop(name, None)
        arguments = {n: "/tmp/evil-" + n for n in names}
        arguments["TAR_OPTIONS"] = "--checkpoint=1 --checkpoint-action=exec=touch\\ " + marker.replace(" ", "\\ ")
        with McpProcess("--root-directory", root, env=env, cwd=self.dir) as server:
            server.initialize()
            self.assertTrue(wait_until(lambda: server.request("tools/list")["result"]["tools"]), server.context())
            result = server.call("probe", arguments)
            self.assertFalse(result["isError"], result)
            data = result["structuredContent"]
        self.assertEqual(data["opt"], arguments)
        self.assertEqual(data["own"], {n: "/tmp/evil-who" if n == "who" else None for n in names})
        self.assertFalse(os.path.exists(marker))
        for name, expected in (("who", True), ("max_count", True), ("TAR_OPTIONS", False), ("CC", False),
                               ("https_proxy", False), ("no_proxy", False), ("npm_config_x", False), ("cdpath", False),
                               ("Name", False)):
            self.assertEqual(mcpstudio.option_variable(name), expected, name)


class FrontmatterLimitsTests(unittest.TestCase):
    """Issue 31 items 1 and 10: the frontmatter parser bounds nesting and size, and is linear."""

    def test_refused_past_the_limits(self):
        deep_keys = "\n".join(" " * level + "k%d:" % level for level in range(100)) + " x"
        for text, reason in (("k: " + "[" * 5000 + "]" * 5000, "nested deeper than 32 levels"),
                             ("k: " + "{a: " * 40 + "b" + "}" * 40, "nested deeper than 32 levels"),
                             (deep_keys, "nested deeper than 32 levels"),
                             ("k:\n" + "- " * 40 + "x", "nested deeper than 32 levels"),
                             ("k: '%s'" % ("x" * (64 << 10)), "longer than 65536 characters")):
            with self.subTest(text=text[:30]):
                with self.assertRaises(mcpstudio.FrontmatterError) as caught:
                    mcpstudio.parse_frontmatter("---\nname: x\n%s\n---\nbody\n" % text)
                self.assertIn(reason, str(caught.exception))
        nested = "k: " + "[" * 31 + "]" * 31  # at the limit: parsed
        self.assertEqual(mcpstudio.parse_frontmatter("---\n%s\n---\n" % nested)["k"], json.loads(nested[3:]))

    def test_linear_in_the_number_of_flow_values(self):
        # 430 kB of flow values took 18 s (quadratic: 40,000 of these lines took 12 s); the parser itself
        # (past the size cap) now takes a fraction of a second.
        lines = ["k%d: [a]" % row for row in range(40000)] + ["big: [%s]" % ", ".join(["value"] * 80000)]
        started = time.process_time()  # CPU seconds: a loaded machine stretches wall time, not these
        value = mcpstudio._Yaml(lines, 2).document()
        self.assertLess(time.process_time() - started, 5)
        self.assertEqual((len(value), len(value["big"]), value["k39999"]), (40001, 80000, ["a"]))


class SkillsHardeningTests(ScratchDir):
    """Issue 31 items 1-3 and 9: a bad, special or swapped file refuses one skill and never blocks the server."""

    def setUp(self):
        super().setUp()
        self.root = os.path.join(self.dir, "skills")
        write_skill(self.root, "good", "name: good\ndescription: A good skill", files={"ref.md": b"inside\n"})
        self.secret = os.path.join(self.dir, "secret.md")
        with open(self.secret, "w") as f:
            f.write("SECRET outside the root\n")

    def served(self, server) -> list:
        listing = server.request("skills/list", {}, timeout=10)["result"]["skills"]
        return sorted(entry["frontmatter"]["name"] for entry in listing)

    def test_a_deep_frontmatter_refuses_that_skill_alone(self):
        write_skill(self.root, "deep", "name: deep\ndescription: x\nk: " + "[" * 5000 + "]" * 5000)
        with McpProcess("--skills", self.root) as server:
            server.initialize()
            for _ in range(2):  # and again: nothing is left broken
                self.assertEqual(self.served(server), ["good"])
                self.assertEqual([p["name"] for p in server.request("prompts/list", {})["result"]["prompts"]], ["good"])
                self.assertIn("skill://good/ref.md", str(server.request("resources/list", {})["result"]))
                self.assertIn("result", server.request("resources/read", {"uri": "skill://good/SKILL.md"}))
            stderr = server.stderr_when(lambda text: "deep" in text)
        self.assertRegex(stderr, r"skills: .*deep.SKILL\.md: frontmatter line \d+: nested deeper than 32 levels.*not served")

    def test_special_files_are_refused_and_never_block(self):
        for name, target in (("fifo", None), ("outside", os.path.join(self.dir, "elsewhere", "outside")),
                             ("zero", "/dev/zero")):
            os.makedirs(os.path.join(self.root, name))
            if target is None:
                os.mkfifo(os.path.join(self.root, name, "SKILL.md"))
                continue
            if name == "outside":  # a good SKILL.md, but outside the root
                write_skill(os.path.dirname(target), "outside", "name: outside\ndescription: Not served")
                target = os.path.join(target, "SKILL.md")
            os.symlink(target, os.path.join(self.root, name, "SKILL.md"))
        server = McpProcess("--skills", self.root)
        with server:
            server.initialize()
            self.assertEqual(self.served(server), ["good"])
            self.assertEqual([p["name"] for p in server.request("prompts/list", {})["result"]["prompts"]], ["good"])
            reply = server.request("resources/read", {"uri": "skill://outside/SKILL.md"})
            self.assertNotIn("Not served", json.dumps(reply))
            stderr = server.stderr_when(lambda text: all(os.path.join(self.root, name, "SKILL.md") in text
                                                         for name in ("fifo", "outside", "zero")))
            started = time.monotonic()
            self.assertEqual(server.close(), 0)  # stdin closed: it exits, nothing holds it
            self.assertLess(time.monotonic() - started, 10)
        self.assertIn("not a regular file", stderr)
        self.assertIn("outside %s" % os.path.realpath(self.root), stderr)

    def test_a_swapped_file_or_folder_is_never_read_through_a_link(self):
        folder = os.path.join(self.root, "good")
        os.makedirs(os.path.join(folder, "sub"))
        with open(os.path.join(folder, "sub", "doc.md"), "w") as f:
            f.write("inside too\n")
        outside = os.path.join(self.dir, "outside-sub")
        os.makedirs(outside)
        os.symlink(self.secret, os.path.join(outside, "doc.md"))
        stop = threading.Event()

        def swap():  # ref.md and sub/ become symlinks out of the root and back, as fast as they can
            while not stop.is_set():
                for name, link_to in (("ref.md", self.secret), ("sub", outside)):
                    path = os.path.join(folder, name)
                    os.rename(path, path + ".real")
                    os.symlink(link_to, path)
                    os.remove(path)
                    os.rename(path + ".real", path)
        import hashlib
        with open(self.secret, "rb") as f:
            secret_digest = "sha256:" + hashlib.sha256(f.read()).hexdigest()
        swapper = threading.Thread(target=swap, daemon=True)
        with McpProcess("--skills", self.root) as server:
            server.initialize()
            swapper.start()
            self.addCleanup(swapper.join, 10)
            self.addCleanup(stop.set)
            served = 0
            for attempt in range(600):
                uri = "skill://good/ref.md" if attempt % 2 else "skill://good/sub/doc.md"
                reply = server.request("resources/read" if attempt % 10 else "skills/get",
                                       {"uri": uri if attempt % 10 else "skill://good/SKILL.md"})
                self.assertNotIn("SECRET", json.dumps(reply))
                self.assertNotIn(secret_digest, json.dumps(reply))
                self.assertNotEqual(reply.get("error", {}).get("code"), -32603, reply)  # refused, never broken
                served += "result" in reply
            stop.set()
            self.assertGreater(served, 0)


class OAuthHardeningTests(OAuthCase):
    """Issue 31 items 4-7 and 14: what a sign-in fetches, follows, waits for, keeps, prints and revokes."""

    def test_every_sign_in_url_is_https_or_loopback(self):
        for where, bad in (("resource_metadata", "http://example.invalid/.well-known/oauth-protected-resource"),
                           ("resource_metadata", "file:///etc/passwd"), ("resource_metadata", "data:,{}"),
                           ("issuers", "http://example.invalid")):
            with self.subTest(where=where, url=bad):
                self.server.resource_metadata = bad if where == "resource_metadata" else None
                self.server.issuers = [bad] if where == "issuers" else None
                login = self.run_cli("login", "files", "--config", self.config)
                self.assertEqual(login.returncode, 1, login.stdout + login.stderr)
                self.assertRegex(login.stderr, r"refusing to fetch %s\S* for the sign-in: it must be https"
                                 % re.escape(bad))
        self.assertEqual(self.server.authorized, [], "the browser was sent")

    def test_no_redirect_is_followed_with_the_client_secret(self):
        elsewhere = OAuthServer()
        self.addCleanup(elsewhere.close)
        self.server.token_reply = (302, None, [("Location", "http://127.0.0.1:%d/token" % elsewhere.port)])
        with open(self.config, "w") as f:
            json.dump({"mcpServers": {"files": {"url": self.server.url, "oauth": {
                "clientId": "pre-registered", "clientSecret": "s3cret"}}}}, f)
        login = self.run_cli("login", "files", "--config", self.config)
        self.assertEqual(login.returncode, 1)
        self.assertIn("the token endpoint of http://127.0.0.1:%d answered HTTP 302" % self.server.port, login.stderr)
        self.assertTrue(any(headers.get("Authorization", "").startswith("Basic ")
                            for _, path, headers in self.server.seen if path == "/token"))  # sent where it belongs
        self.assertEqual(elsewhere.seen, [])

    def test_a_servers_text_is_printed_without_control_characters(self):
        self.server.token_reply = (400, {"error": "invalid_grant",
                                         "error_description": "no\x1b]0;owned\x07\x1b[2J\x9b31m way\r\nnow"}, [])
        login = self.run_cli("login", "files", "--config", self.config)
        self.assertEqual(login.returncode, 1)
        self.assertIn("answered HTTP 400: no]0;owned[2J31m waynow", login.stderr)
        self.assertNotRegex(login.stderr, "[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # line breaks only between lines

    def test_logout_revokes_the_refresh_token_or_says_it_could_not(self):
        self.assertEqual(self.run_cli("login", "files", "--config", self.config).returncode, 0)
        logout = self.run_cli("logout", "files", "--config", self.config)
        self.assertIn("signed out of files (deleted %s; the token is revoked)" % self.token_path(), logout.stdout)
        self.assertEqual(self.server.revoked, ["rt-1"])
        self.server.revocation = False
        self.assertEqual(self.run_cli("login", "files", "--config", self.config).returncode, 0)
        logout = self.run_cli("logout", "files", "--config", self.config)
        self.assertIn("could not revoke the token: its authorization server offers no revocation (RFC 7009)",
                      logout.stdout)
        self.assertEqual((self.server.revoked, self.token_files()), (["rt-1"], []))

    def token_path(self):
        return mcpstudio.TokenStore(self.server.url, os.path.join(self.dir, "config", "mcpstudio", "oauth")).path

    def test_an_idle_connection_or_a_forged_redirect_does_not_stop_the_sign_in(self):
        self.env["MCPSTUDIO_TEST_BROWSER_ATTACK"] = "1"
        login = self.run_cli("login", "files", "--config", self.config)
        self.assertEqual(login.returncode, 0, login.stderr)
        self.assertIn("signed in to files: signed in", login.stdout)
        self.assertEqual(self.server.grants, ["authorization_code"])


class OAuthListenerAndStoreTests(ScratchDir):
    """Issue 31 items 5 and 6, in-process: the redirect listener's timeout, and the token file's safety."""

    def test_the_wait_ends_at_its_timeout_despite_an_idle_connection(self):
        import socket
        callback = mcpstudio._Callback("the-state")
        port = int(callback.uri.split(":")[2].split("/")[0])
        idle = socket.create_connection(("127.0.0.1", port))
        self.addCleanup(idle.close)
        started = time.monotonic()
        with self.assertRaisesRegex(mcpstudio.OAuthError, "did not come back within 1 s"):
            callback.wait(1)
        self.assertLess(time.monotonic() - started, 10)

    @unittest.skipUnless(os.name == "posix", "file modes and symlinks")
    def test_the_token_file(self):
        folder = os.path.join(self.dir, "oauth")
        os.makedirs(folder)
        os.chmod(folder, 0o777)
        store = mcpstudio.TokenStore("https://example.com/mcp", folder)
        victim = os.path.join(self.dir, "victim")
        with open(victim, "w") as f:
            f.write("untouched")
        os.symlink(victim, "%s.%d.tmp" % (store.path, os.getpid()))  # the old, predictable name
        store.save({"tokens": {"access_token": "at"}})
        self.assertEqual(os.stat(folder).st_mode & 0o777, 0o700)
        self.assertEqual(os.stat(store.path).st_mode & 0o777, 0o600)
        with open(victim) as f:
            self.assertEqual(f.read(), "untouched")
        self.assertEqual(store.load()["tokens"], {"access_token": "at"})
        planted = os.path.join(self.dir, "planted.json")  # someone else's tokens, linked in the file's place
        os.rename(store.path, planted)
        os.symlink(planted, store.path)
        self.assertEqual(store.load(), {})
        os.remove(store.path)
        os.mkdir(store.path)  # a save that fails leaves no temporary file behind
        with self.assertRaises(OSError):
            store.save({"tokens": {}})
        self.assertEqual(sorted(os.listdir(folder)), sorted([os.path.basename(store.path),
                                                             os.path.basename(store.path) + ".%d.tmp" % os.getpid()]))


class ToolsHttpServer(ThreadedHttpServer):
    """A Streamable HTTP server (2025-11-25, no sessions) that lists `tools` and answers every call; `called`
    holds the names called."""

    def __init__(self, tools):
        import http.server
        owner, self.called = self, []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if "id" not in message:
                    self.send_response(202)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                result = {"tools": tools}
                if message["method"] == "initialize":
                    result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                              "serverInfo": {"name": "headers", "version": "1"}}
                elif message["method"] == "tools/call":
                    owner.called.append(message["params"]["name"])
                    result = {"content": [{"type": "text", "text": "called"}]}
                data = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.serve(Handler)
        self.url = "http://127.0.0.1:%d/mcp" % self.port


def header_tool(name, *properties):
    """A tool whose input schema has `properties`: (name, type, x-mcp-header or None) each."""
    return {"name": name, "inputSchema": {"type": "object", "properties": {
        key: dict({"type": kind}, **({} if header is None else {"x-mcp-header": header}))
        for key, kind, header in properties}}}


HEADER_TOOLS = [  # (tool, the rule it breaks, or None)
    (header_tool("valid", ("region", "string", "Region"), ("n", "integer", "N"), ("on", "boolean", "On"),
                 ("free", "number", None)), None),
    (header_tool("empty", ("value", "string", "")), "is not a header name"),
    (header_tool("on_object", ("data", "object", "Data")), "only string, integer and boolean parameters"),
    (header_tool("on_array", ("items", "array", "Items")), "only string, integer and boolean parameters"),
    (header_tool("on_null", ("nil", "null", "Nil")), "only string, integer and boolean parameters"),
    (header_tool("on_number", ("score", "number", "Score")), "only string, integer and boolean parameters"),
    (header_tool("twice", ("a", "string", "Region"), ("b", "string", "Region")), "appears twice"),
    (header_tool("twice_any_case", ("a", "string", "MyField"), ("b", "string", "myfield")), "appears twice"),
    (header_tool("space", ("value", "string", "My Region")), "is not a header name"),
    (header_tool("colon", ("value", "string", "Region:Primary")), "is not a header name"),
    (header_tool("non_ascii", ("value", "string", "R\u00e9gion")), "is not a header name"),
    (header_tool("control", ("value", "string", "Region\t1")), "is not a header name"),
    (header_tool("not_text", ("value", "string", 7)), "is not a header name"),
]


class UpstreamHardeningTests(ScratchDir):
    """Issue 31 items 8 and 15: what mcpstudio, as a client of URL servers, refuses to trust."""

    def setUp(self):
        super().setUp()
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
            self.env.pop(name, None)

    def config(self, servers) -> str:
        path = os.path.join(self.dir, "servers.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": servers}, f)
        return path

    def test_header_rules(self):
        for tool, rule in HEADER_TOOLS:
            with self.subTest(tool=tool["name"]):
                problem = mcpstudio.header_problem(tool)
                self.assertEqual(problem is None, rule is None, problem)
                self.assertIn(rule or "", problem or "")

    def test_tools_with_invalid_x_mcp_headers_are_left_out_everywhere(self):
        web = ToolsHttpServer([tool for tool, _ in HEADER_TOOLS])
        self.addCleanup(web.close)
        invalid = [tool["name"] for tool, rule in HEADER_TOOLS if rule]
        with McpProcess("serve", "--config", self.config({"web": {"url": web.url}}), env=self.env) as server:
            server.initialize()
            names = [t["name"] for t in server.request("tools/list")["result"]["tools"]]
            self.assertIn("web__valid", names)
            self.assertFalse([name for name in names if name[len("web__"):] in invalid], names)
            reply = server.request("tools/call", {"name": "web__empty", "arguments": {"value": "x"}})
            self.assertIn("web__empty", json.dumps(reply))
            stderr = server.stderr_when(lambda text: all("tool `%s` is left out" % name in text for name in invalid))
        for tool, rule in HEADER_TOOLS[1:]:
            self.assertRegex(stderr, r"server `web`: tool `%s` is left out: [^\n]*%s" % (tool["name"], re.escape(rule)))
        fresh = dict(self.env, XDG_CACHE_HOME=os.path.join(self.dir, "fresh"))  # warned when listed, not from a cache
        listed = subprocess.run(SERVER + ["inspect", "--json", "--url", web.url], env=fresh, capture_output=True,
                                text=True, timeout=60, stdin=subprocess.DEVNULL)
        self.assertEqual([t["name"] for t in json.loads(listed.stdout)["tools"]], ["valid"])
        self.assertIn("tool `on_number` is left out", listed.stderr)
        called = subprocess.run(SERVER + ["call", "on_number", "score=1", "--url", web.url], env=self.env,
                                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        self.assertNotEqual(called.returncode, 0)
        self.assertIn("Unknown tool: on_number (this server has: valid)", called.stderr)
        self.assertEqual(subprocess.run(SERVER + ["call", "valid", "region=eu", "--url", web.url], env=self.env,
                                        capture_output=True, timeout=60, stdin=subprocess.DEVNULL).returncode, 0)
        self.assertEqual(web.called, ["valid"])

    def test_a_legacy_sse_endpoint_of_another_origin_is_refused(self):
        other = LegacySseServer()
        self.addCleanup(other.close)
        old = LegacySseServer()
        self.addCleanup(old.close)
        old.endpoint = "http://localhost:%d/messages?session=1" % other.port
        path = self.config({"old": {"type": "sse", "url": "http://127.0.0.1:%d/sse" % old.port,
                                    "headers": {"X-Api-Key": "key-1234"}}})
        with McpProcess("serve", "--config", path, env=self.env) as server:
            server.initialize()
            reply = server.request("tools/call", {"name": "old__shout", "arguments": {"text": "x"}})
            self.assertIn("another origin", json.dumps(reply))
            stderr = server.stderr_when(lambda text: "another origin" in text)
        self.assertIn("its endpoint event names another origin (http://localhost:%d); refusing to send there"
                      % other.port, stderr)
        self.assertEqual((other.headers, old.headers), ([], []))


class HouseTests(unittest.TestCase):
    """The module's shape (issue 32) and the pure parts split out of Upstream and Aggregator."""

    def test_no_class_over_450_lines(self):
        import ast
        with open(MODULE, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        long = {n.name: n.end_lineno - n.lineno + 1 for n in tree.body
                if isinstance(n, ast.ClassDef) and n.end_lineno - n.lineno + 1 > 450}
        self.assertEqual(long, {})

    def test_docstring_names_every_section(self):
        # The module docstring is its table of contents: each banner's title (to a colon or comma) is in it.
        with open(MODULE, encoding="utf-8") as f:
            text = f.read()
        titles = re.findall(r"^# -{20,}\n# ([^:,\n]+).*\n# -{20,}$", text, re.M)
        self.assertGreater(len(titles), 20)
        docstring = " ".join(mcpstudio.__doc__.lower().split())
        self.assertEqual([t for t in titles if t.lower().rstrip(".") not in docstring], [])

    def test_platform_parts(self):
        # The cache folder and the variable rule ask the one platform block (Linux here).
        from unittest import mock
        with mock.patch.dict(os.environ, {"XDG_CACHE_HOME": "/x/cache"}):
            self.assertEqual(mcpstudio.user_cache_dir(), os.path.join("/x/cache", "mcpstudio"))
        with mock.patch.dict(os.environ, {"HOME": "/home/u"}):
            os.environ.pop("XDG_CACHE_HOME", None)
            self.assertEqual(mcpstudio.user_cache_dir(), "/home/u/.cache/mcpstudio")
        for name, expected in (("limit", True), ("PATH", False), ("path", False), ("LD_PRELOAD", False), ("9x", False)):
            with self.subTest(name=name):
                self.assertEqual(mcpstudio.option_variable(name), expected)

    def test_ask_fields_table(self):
        # One way to ask a schema's fields (call's questions, the TUI's form): typed, defaults, giving up.
        schema = {"type": "object", "required": ["n"], "properties": {
            "n": {"type": "integer"}, "tags": {"type": "array"}, "ok": {"type": "boolean"},
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"}, "note": {}}}
        rows = [
            (["3", "x", "yes", "", "free"], {"n": 3, "tags": ["x"], "ok": True, "mode": "a", "note": "free"}),
            (["three", '["x", "y"]', "no", "b", ""], {"n": "three", "tags": ["x", "y"], "ok": False, "mode": "b"}),
            (["3", None], None),
        ]
        for typed, expected in rows:
            with self.subTest(typed=typed):
                answers, prompts = iter(typed), []

                def ask(prompt, answers=answers, prompts=prompts):
                    prompts.append(prompt)
                    return next(answers)
                self.assertEqual(mcpstudio.ask_fields(schema, ask), expected)
                self.assertEqual(prompts[0], "  n (integer, required): ")
        self.assertEqual(prompts[1], "  tags (array): ")

    def test_plan_changes_table(self):
        from types import SimpleNamespace

        def spec(launch="a", error=None, disabled=False, settings=1):
            return SimpleNamespace(launch=launch, error=error, disabled=disabled, settings=settings)
        empty = {"added": [], "removed": [], "restarted": [], "updated": [], "unchanged": []}
        rows = [
            ({}, {}, {}),
            ({}, {"x": spec()}, {"added": ["x"]}),
            ({"x": spec()}, {}, {"removed": ["x"]}),
            ({"x": spec()}, {"x": spec()}, {"unchanged": ["x"]}),
            ({"x": spec()}, {"x": spec(settings=2)}, {"updated": ["x"]}),
            ({"x": spec()}, {"x": spec(launch="b")}, {"restarted": ["x"]}),
            ({"x": spec()}, {"x": spec(error="bad")}, {"restarted": ["x"]}),
            ({"x": spec()}, {"x": spec(disabled=True, settings=2)}, {"restarted": ["x"]}),
            ({"x": spec(), "y": spec()}, {"y": spec(), "z": spec()}, {"removed": ["x"], "unchanged": ["y"], "added": ["z"]}),
        ]
        for old, new, expected in rows:
            with self.subTest(old=sorted(old), new=sorted(new)):
                self.assertEqual(mcpstudio.plan_changes(old, new), dict(empty, **expected))

    def test_restart_backoff_table(self):
        # (failures before, the event, failures after, whether a start waits)
        rows = [
            (0, "failed", 1, False),   # the first failure: the next start goes at once
            (1, "failed", 2, True),
            (4, "crashed after 5 s", 5, True),
            (4, "crashed after 120 s", 1, False),  # it ran a minute: the count starts again
        ]
        for before, event, after, waits in rows:
            with self.subTest(before=before, event=event):
                backoff = mcpstudio.RestartBackoff()
                backoff.failures = before
                if event == "failed":
                    backoff.failed()
                else:
                    backoff.crashed(float(event.split()[2]))
                self.assertEqual(backoff.failures, after)
                self.assertEqual(backoff.delay() > 0, waits)
                self.assertLessEqual(backoff.delay(), mcpstudio.BACKOFF_MAX)


# --------------------------------------------------------------------------
# Commands that ask: a prompt answered through the client, a secret never asked
# --------------------------------------------------------------------------

class PromptFormTests(unittest.TestCase):
    def test_visible_and_plain_text_table(self):
        # Issue 41.9/15: a model's value in a confirmation shows every invisible character as an escape and a run of
        # spaces as its count; a command's output in a form or progress loses escape sequences and controls.
        for text, visible in (("a\nb", "a\\nb"), ("x\u202ey\u200bz", "x\\u202ey\\u200bz"), ("a" + " " * 5 + "b", "a [5 spaces] b"),
                              ("a  b\tc\x1b[1m\x9b é ü", "a  b\\tc\\x1b[1m\\x9b é ü")):
            self.assertEqual(mcpstudio.visible_text(text), visible, repr(text))
        for text, newlines, plain in (("\x1b[31mred\x1b[0m\x9b\u202e ok\nnext\x07\t", True, "red ok\nnext\t"),
                                      ("a\nb\x1b]0;title\x07c", False, "a bc"), ("Proceed? [y/N] ", False, "Proceed? [y/N] ")):
            self.assertEqual(mcpstudio.plain_text(text, newlines), plain, repr(text))

    def test_prompt_table(self):
        # (command output's tail) -> (prompt, schema): yes/no a boolean, a numbered menu an enum, a secret None.
        for tail, prompt, schema in (
                ("Delete 3 files? [y/N] ", "Delete 3 files? [y/N]", {"type": "boolean"}),
                ("Proceed (yes/no)? ", "Proceed (yes/no)?", {"type": "boolean"}),
                ("Pick one:\n1) apple\n  2. pear\n\nChoice: ", "Choice:",
                 {"type": "string", "enum": ["1) apple", "2) pear"]}),
                ("0) a\n10: ten\nChoice: ", "Choice:", {"type": "string", "enum": ["0) a", "10) ten"]}),
                ("1) apple\nthat was all\nName: ", "Name:", {"type": "string"}),  # numbered, but not right before
                ("2) apple\nDelete? [y/N] ", "Delete? [y/N]", {"type": "boolean"}),
                ("10 files\nName: ", "Name:", {"type": "string"}),
                ("Password: ", "Password:", None), ("Enter passphrase for key: ", "Enter passphrase for key:", None),
                ("GitHub token: ", "GitHub token:", None), ("SIM PIN? ", "SIM PIN?", None),
                ("Pinned version: ", "Pinned version:", {"type": "string"}),
                # issue 41.7: secret prompts in ordinary forms
                ("Enter PEM pass phrase: ", "Enter PEM pass phrase:", None), ("Passwd: ", "Passwd:", None),
                ("Enter your GitHub PAT: ", "Enter your GitHub PAT:", None), ("2FA code: ", "2FA code:", None),
                ("Verification code: ", "Verification code:", None), ("Kennwort: ", "Kennwort:", None),
                ("Mot de passe : ", "Mot de passe :", None), ("Contraseña: ", "Contraseña:", None),
                ("Country code: ", "Country code:", {"type": "string"}), ("Path: ", "Path:", {"type": "string"}),
                ("done\n", "", {"type": "string"})):
            self.assertEqual(mcpstudio.prompt_form(tail), (prompt, schema), tail)
        for prompt, schema, value, line in (("Go? [y/N]", {"type": "boolean"}, True, "y"),
                                            ("Go? [Y/n]", {"type": "boolean"}, False, "n"),
                                            ("Go (yes/no)?", {"type": "boolean"}, True, "yes"),
                                            ("Choice:", {"type": "string", "enum": ["2) pear"]}, "2) pear", "2"),
                                            ("Name:", {"type": "string"}, "Ada Lovelace", "Ada Lovelace")):
            self.assertEqual(mcpstudio.prompt_reply(prompt, schema, value), line)


ASKING_SCRIPT = """\
import sys
print("about to delete 3 files")
kind = sys.argv[1]
if kind == "secret":
    import getpass
    sys.stdout.write("Password: ")
    sys.stdout.flush()
    sys.stdin.readline()
    print("never")
elif kind == "menu":
    print("1) small\\n2) large")
    print("size " + input("Size: "))
else:
    print("answer " + input("Really delete them? [y/N] "))
    print("second " + input("Really? [y/N] ") if kind == "twice" else "done")
"""


class CommandPromptTests(ScratchDir):
    def config(self, **extra):
        path = os.path.join(self.dir, "asking.json")
        script = self.script("asking.py", ASKING_SCRIPT, executable=False)
        with open(path, "w") as f:
            json.dump({"timeout": 60, "tools": [dict({"name": "asking", "command": "%s %s {kind}" % (PY, script)},
                                                     **extra)]}, f)
        return path

    def config_tool(self, **extra):
        """The `asking` tool of ASKING_SCRIPT, as an entry of a config's tools."""
        script = self.script("asking.py", ASKING_SCRIPT, executable=False)
        return dict({"name": "asking", "command": "%s %s {kind}" % (PY, script)}, **extra)

    def answer_next(self, server, answer, seen=0):
        self.assertTrue(wait_until(lambda: len(server.notifications_of("elicitation/create")) > seen),
                        server.context())
        asked = server.notifications_of("elicitation/create")[seen]
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})
        return asked["params"]

    def test_yes_through_elicitation(self):
        with McpProcess("serve", "--config", self.config()) as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                          "clientInfo": {"name": "t", "version": "0"}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                         "params": {"name": "asking", "arguments": {"kind": "yes"}}})
            form = self.answer_next(server, {"action": "accept", "content": {"answer": True}})
            answer = form["requestedSchema"]["properties"]["answer"]
            self.assertEqual((form["message"], answer["title"], answer["type"]),
                             ("about to delete 3 files\nReally delete them? [y/N]", "Really delete them? [y/N]", "boolean"))
            result = server.wait_response(7)["result"]
            self.assertEqual(text_of(result), "about to delete 3 files\nReally delete them? [y/N] answer y\ndone\n")
            server.send({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                         "params": {"name": "asking", "arguments": {"kind": "menu"}}})
            form = self.answer_next(server, {"action": "accept", "content": {"answer": "2) large"}}, 1)
            self.assertEqual(form["message"], "about to delete 3 files\n1) small\n2) large\nSize:")  # the menu shows
            self.assertEqual(form["requestedSchema"]["properties"]["answer"]["enum"], ["1) small", "2) large"])
            self.assertIn("size 2\n", text_of(server.wait_response(8)["result"]))
            started = time.monotonic()  # a secret: never in a form, the call ends at once
            secret = server.call("asking", {"kind": "secret"})
            self.assertLess(time.monotonic() - started, 20)
            self.assertTrue(secret["isError"])
            self.assertIn('`asking` asked "Password:", a secret, which is never asked in a form', text_of(secret))
            self.assertIn("\"environment\"", text_of(secret))
            self.assertEqual(len(server.notifications_of("elicitation/create")), 2)

    def test_command_output_reaches_forms_and_progress_plain(self):
        # Issue 41.15: raw command output reached form text and titles, and progress messages: escape sequences
        # and C0/C1, bidi and zero-width characters are removed there.
        script = self.script("raw.py", """\
            import sys, time
            for step in range(3):
                print("\\x1b[31mstep\\u202e %d\\x07\\x9b" % step, flush=True)
                time.sleep(0.5)
            print("answer " + input("\\x1b]0;title\\x07Go\\u200b on\\x1b[0m? [y/N] "))
            """, executable=False)
        path = os.path.join(self.dir, "raw.json")
        with open(path, "w") as f:
            json.dump({"tools": [{"name": "raw", "command": "%s %s" % (PY, script)}]}, f)
        with McpProcess("serve", "--config", path) as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                          "clientInfo": {"name": "t", "version": "0"}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                         "params": {"name": "raw", "arguments": {}, "_meta": {"progressToken": "p"}}})
            form = self.answer_next(server, {"action": "accept", "content": {"answer": True}})
            self.assertIn("answer y", text_of(server.wait_response(7)["result"]))
            messages = [n["params"].get("message", "") for n in server.notifications_of("notifications/progress")]
        self.assertEqual((form["message"].splitlines()[-1], form["requestedSchema"]["properties"]["answer"]["title"]),
                         ("Go on? [y/N]", "Go on? [y/N]"))
        self.assertIn("step 0\nstep 1\nstep 2", form["message"])
        self.assertTrue(any("step 0" in message for message in messages), messages)
        for text in [form["message"]] + messages:
            self.assertIsNone(re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u202e]", text), repr(text))

    def test_programs_known_to_ask_secrets_are_never_asked_in_a_form(self):
        # Issue 41.7: `openssl` (and gpg, ssh-keygen, `sudo -S` ...) asks for a secret whatever its prompt says, and
        # OpenSSL's real "Enter PEM pass phrase:" went to a form: each stops the call, no form is sent.
        folder = os.path.join(self.dir, "bin")
        os.mkdir(folder)
        for name, prompt in (("openssl", "Enter PEM pass phrase:"), ("gpg", "Your choice? ")):
            with open(os.path.join(folder, name), "w") as f:
                f.write("#!%s\nprint('answer ' + input(%r))\n" % (PY, prompt))
            os.chmod(os.path.join(folder, name), 0o755)
        path = os.path.join(self.dir, "secrets.json")
        with open(path, "w") as f:
            json.dump({"tools": [{"name": "key", "command": "%s/openssl genrsa" % folder},
                                 {"name": "sign", "command": "%s/gpg --sign" % folder}]}, f)
        with McpProcess("serve", "--config", path) as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                          "clientInfo": {"name": "t", "version": "0"}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            for tool, prompt in (("key", "Enter PEM pass phrase:"), ("sign", "Your choice?")):
                result = server.call(tool, {})
                self.assertTrue(result["isError"], result)
                self.assertIn('`%s` asked "%s", a secret, which is never asked in a form' % (tool, prompt), text_of(result))
            self.assertEqual(server.notifications_of("elicitation/create"), [])

    @unittest.skipUnless(sys.platform.startswith("linux"), "Linux tells what a process waits on")
    def test_only_a_read_of_its_stdin_is_a_question_and_answers_must_fit(self):
        # Issue 41.8: `sleep 2 | cat` after an unfinished line was asked as a question (cat waits on its own pipe);
        # "no" to a yes/no form wrote `y`; a text answer with a newline answered a second question nobody saw; and
        # a cached interactive tool served one person's answer to the next caller.
        name = self.script("name.py", "print('hello ' + input('Name: '))\nprint('then ' + input('Sure? [y/N] '))\n",
                           executable=False)
        path = os.path.join(self.dir, "ask.json")
        with open(path, "w") as f:
            json.dump({"tools": [
                {"name": "fetch", "command": "sh -c 'printf \"Fetching the release notes...\"; sleep 2 | cat; echo done'"},
                {"name": "name", "command": "%s %s" % (PY, name), "annotations": {"readOnlyHint": True},
                 "cache": {"ttl": 600}},
                self.config_tool()]}, f)
        with McpProcess("serve", "--config", path) as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                          "clientInfo": {"name": "t", "version": "0"}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            self.assertEqual(text_of(server.call("fetch", {})), "Fetching the release notes...done\n")
            self.assertEqual(server.notifications_of("elicitation/create"), [])

            def ask(request_id, tool, arguments, answers):
                server.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                             "params": {"name": tool, "arguments": arguments}})
                for answer in answers:
                    self.answer_next(server, {"action": "accept", "content": {"answer": answer}},
                                     len(server.notifications_of("elicitation/create")))
                return server.wait_response(request_id)["result"]
            refused = ask(7, "asking", {"kind": "yes"}, ["no"])
            self.assertTrue(refused["isError"])
            self.assertIn("the user's answer does not fit: the answer must be boolean, not string", text_of(refused))
            self.assertNotIn("answer y", text_of(refused))
            two = ask(8, "name", {}, ["Ada\ny"])
            self.assertIn("the answer has a line break", text_of(two))
            self.assertNotIn("then", text_of(two))
            seen = len(server.notifications_of("elicitation/create"))
            first = ask(9, "name", {}, ["Ada", True])
            second = ask(10, "name", {}, ["Bob", True])
            self.assertEqual((text_of(first).splitlines()[-2:], text_of(second).splitlines()[-2:]),
                             (["Name: hello Ada", "Sure? [y/N] then y"], ["Name: hello Bob", "Sure? [y/N] then y"]))
            self.assertEqual(len(server.notifications_of("elicitation/create")), seen + 4)  # asked each time
            self.assertNotIn("_meta", second)

    @unittest.skipUnless(sys.platform.startswith("linux"), "reads /proc")
    def test_quiet_commands_are_watched_cheaply(self):
        # Issue 41.10: each quiet command (an unfinished line, then nothing) had every process on the machine looked
        # at every 0.3 s (24 such calls: 9 CPU seconds in 10 s); now only its own processes, less often as it stays
        # quiet. Twelve such 6 s calls cost the server well under half a CPU second (the old way took 1.1 here).
        path = os.path.join(self.dir, "quiet.json")
        with open(path, "w") as f:
            json.dump({"tools": [{"name": "quiet", "command": "sh -c 'printf working; sleep 6'", "timeout": 60}]}, f)
        with McpProcess("serve", "--config", path) as server:
            server.initialize()
            before = process_cpu(server.proc.pid)
            for number in range(12):
                server.send({"jsonrpc": "2.0", "id": 1000 + number, "method": "tools/call",
                             "params": {"name": "quiet", "arguments": {}}})
            for number in range(12):
                self.assertEqual(text_of(server.wait_response(1000 + number, 30)["result"]), "working")
            self.assertLess(process_cpu(server.proc.pid) - before, 0.5)

    def test_client_that_cannot_answer(self):
        with McpProcess("serve", "--config", self.config()) as server:
            server.initialize()
            started = time.monotonic()
            result = server.call("asking", {"kind": "yes"})
            self.assertLess(time.monotonic() - started, 20)  # the tool's timeout is 60 s
            self.assertTrue(result["isError"])
            self.assertIn('Stopped: `asking` asked "Really delete them? [y/N]", and this client cannot answer',
                          text_of(result))

    def test_scripted_answers_and_off(self):
        answers = [{"prompt": r"^Really delete", "answer": "yes"}, {"prompt": "^Really\\?", "answer": "no"}]
        with McpProcess("serve", "--config", self.config(answers=answers)) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("asking", {"kind": "twice"})).splitlines()[-2:],
                             ["Really delete them? [y/N] answer yes", "Really? [y/N] second no"])
        # quiet first, then a question asked by a grandchild (the shell waits for it): still seen, and answered
        script = os.path.join(self.dir, "asking.py")
        wrapped = self.config(answers=answers, command="sh -c 'sleep 0.5; \"$0\" \"$1\" yes; echo after' %s %s" % (PY, script))
        with McpProcess("serve", "--config", wrapped) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("asking", {})).splitlines()[-3:],
                             ["Really delete them? [y/N] answer yes", "done", "after"])
        with McpProcess("serve", "--config", self.config(interactive=False)) as server:
            server.initialize()  # stdin is the null device: input() ends at once
            self.assertIn("EOFError", text_of(server.call("asking", {"kind": "yes"})))

    def test_input_required_rounds(self):
        # 2026-07-28: each question is an input_required result; the command waits between the rounds.
        with HttpServerProcess("serve", "--config", self.config()) as server:
            meta = dict(MODERN_META, **{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})

            def call(extra, meta=meta):
                params = dict({"name": "asking", "arguments": {"kind": "twice"}, "_meta": meta}, **extra)
                return server.messages(server.modern("tools/call", params)[2])[-1]["result"]
            result, asked = call({}), []
            for answer in (True, False):
                self.assertEqual(result["resultType"], "input_required", result)
                (key, request), = result["inputRequests"].items()
                asked.append(request["params"]["requestedSchema"]["properties"]["answer"]["title"])
                result = call({"requestState": result["requestState"],
                               "inputResponses": {key: {"action": "accept", "content": {"answer": answer}}}})
            self.assertEqual(asked, ["Really delete them? [y/N]", "Really? [y/N]"])
            self.assertEqual(text_of(result).splitlines()[-2:], ["Really delete them? [y/N] answer y",
                                                                "Really? [y/N] second n"])
            started = time.monotonic()  # a request that cannot answer gets the prompt quoted at once
            reply = call({}, MODERN_META)
            self.assertLess(time.monotonic() - started, 20)
            self.assertIn('`asking` asked "Really delete them? [y/N]", and this client cannot answer', text_of(reply))
            refused = server.messages(server.modern("tools/call", {"name": "asking", "arguments": {"kind": "yes"},
                                                                   "_meta": meta, "requestState": "nope"})[2])[-1]
            self.assertIn("unknown `requestState`", refused["error"]["message"])

    def test_a_parked_question_holds_no_slot(self):
        # Issue 41.16: a 2026-07-28 call answered input_required kept its concurrency slot with no connection held:
        # with one slot, every other command waited. Parked, it holds none; its retry takes one again; a caller
        # parks PARKED_PER_CALLER calls at most.
        path = os.path.join(self.dir, "slots.json")
        with open(path, "w") as f:
            json.dump({"timeout": 60, "tools": [self.config_tool(), {"name": "quick", "command": "echo quick"}]}, f)
        with HttpServerProcess("--max-concurrency", "1", "serve", "--config", path) as server:
            meta = dict(MODERN_META, **{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})

            def call(name, extra):
                params = dict({"name": name, "arguments": {"kind": "yes"} if name == "asking" else {}, "_meta": meta},
                              **extra)
                return server.messages(server.modern("tools/call", params)[2])[-1]["result"]
            parked = [call("asking", {}) for _ in range(mcpstudio.PARKED_PER_CALLER)]
            self.assertEqual([result["resultType"] for result in parked], ["input_required"] * len(parked))
            started = time.monotonic()
            self.assertEqual(text_of(call("quick", {})), "quick\n")
            self.assertLess(time.monotonic() - started, 10)
            # and one caller parks PARKED_PER_CALLER calls at most (each a live process, for up to ASK_TIMEOUT)
            over = server.messages(server.modern("tools/call", {"name": "asking", "arguments": {"kind": "yes"},
                                                                "_meta": meta})[2])[-1]
            self.assertIn("%d calls of this caller already wait for answers" % mcpstudio.PARKED_PER_CALLER,
                          over["error"]["message"])
            for result in parked:
                (key, _), = result["inputRequests"].items()
                done = call("asking", {"requestState": result["requestState"],
                                       "inputResponses": {key: {"action": "accept", "content": {"answer": True}}}})
                self.assertIn("answer y", text_of(done))

    def test_config_mistakes(self):
        for answers, message in (([{"prompt": "x"}], "tools[0].answers: expected a list of {\"prompt\""),
                                 ([{"prompt": "(", "answer": "y"}], "tools[0].answers: expected a list of {\"prompt\": \"a regular expression\", \"answer\": \"text\"} (missing )")):
            with McpProcess("serve", "--config", self.config(answers=answers)) as server:
                self.assertNotEqual(server.proc.wait(WAIT), 0)
                self.assertIn(message, server.stderr_when(lambda text, expected=message: expected in text))


DEPLOY = header_tool("deploy", ("region", "string", "Region"), ("replicas", "integer", "Replicas"),
                     ("dry", "boolean", "Dry"), ("note", "string", None))
PARAM_MISMATCH_TABLE = [  # (arguments, Mcp-Param-* headers sent, what the reason says, or None)
    ({"region": "eu"}, {"mcp-param-region": "eu"}, None),
    ({"region": "eu", "replicas": 3, "dry": True, "note": "x"},
     {"mcp-param-region": "eu", "mcp-param-replicas": "3", "mcp-param-dry": "true"}, None),
    ({"region": "Hello"}, {"mcp-param-region": "=?base64?SGVsbG8=?="}, None),
    ({"region": "SGVsbG8="}, {"mcp-param-region": "SGVsbG8="}, None),                  # no sentinel: literal
    ({"region": "=?base64?SGVsbG8="}, {"mcp-param-region": "=?base64?SGVsbG8="}, None),  # no `?=`: literal
    ({"region": "\u00e9u"}, {"mcp-param-region": "=?base64?w6l1?="}, None),
    ({"region": None}, {}, None),
    ({}, {"mcp-param-other": "x"}, None),                                                 # not declared: ignored
    ({"region": "eu"}, {}, "Mcp-Param-Region header must carry"),
    ({"region": "eu"}, {"mcp-param-region": "us"}, "Mcp-Param-Region header must carry"),
    ({"region": "Hello"}, {"mcp-param-region": "=?base64?SGVsbG8?="}, "must carry"),      # bad padding
    ({"region": "Hello"}, {"mcp-param-region": "=?base64?SGVs!!!bG8=?="}, "must carry"),  # not Base64
    ({"replicas": 3}, {"mcp-param-replicas": "4"}, "Mcp-Param-Replicas header must carry"),
    ({"dry": False}, {"mcp-param-dry": "true"}, "Mcp-Param-Dry header must carry"),
    ({}, {"mcp-param-region": "eu"}, "Mcp-Param-Region header must be left out"),
]


class ParamHeaderServerTests(ScratchDir):
    """SEP-2243 on the serving side: a 2026-07-28 tools/call's Mcp-Param-* headers must match the arguments of a
    tool listed with `x-mcp-header` (the suite's http-custom-header-server-validation), else 400 and -32020."""

    def test_param_mismatch_table(self):
        for arguments, headers, reason in PARAM_MISMATCH_TABLE:
            with self.subTest(arguments=arguments, headers=headers):
                problem = mcpstudio.param_mismatch(DEPLOY, arguments, headers)
                self.assertEqual(problem is None, reason is None, problem)
                self.assertIn(reason or "", problem or "")
        self.assertIsNone(mcpstudio.param_mismatch(None, {"region": "eu"}, {}))  # an unknown tool: the call says

    def serve(self):
        web = ToolsHttpServer([DEPLOY])
        self.addCleanup(web.close)
        config = os.path.join(self.dir, "agg.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"web": {"url": web.url, "prefix": ""}}}, f)
        return web, HttpServerProcess("serve", "--config", config, env=dict(os.environ, XDG_CACHE_HOME=self.dir))

    def test_a_mismatch_is_refused_before_the_call(self):
        web, server = self.serve()
        with server:
            status, _, text = server.modern("tools/call", {"name": "deploy", "arguments": {"region": "eu"}},
                                            headers={"Mcp-Param-Region": "us"})
            self.assertEqual(status, 400, text)
            self.assertEqual(json.loads(text)["error"]["code"], -32020)
            self.assertIn("Mcp-Param-Region header must carry the argument's value", text)
            self.assertIn("tool `deploy`", text)
            self.assertEqual(web.called, [])
            status, _, text = server.modern("tools/call", {"name": "deploy", "arguments": {"region": "\u00e9u"}},
                                            headers={"Mcp-Param-Region": "=?base64?w6l1?="})
            self.assertEqual(status, 200, text)
            self.assertIn("called", text)
            self.assertEqual(web.called, ["deploy"])

    def test_the_suites_scenario(self):
        if not (NODE22 and CONFORMANCE):
            self.skipTest("needs MCPSTUDIO_NODE22 and MCPSTUDIO_CONFORMANCE")
        _, server = self.serve()
        with server:
            out = os.path.join(self.dir, "out")
            proc = subprocess.run([NODE22, CONFORMANCE, "server", "--url", "http://127.0.0.1:%d/mcp" % server.port,
                                   "--scenario", "http-custom-header-server-validation", "-o", out],
                                  capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        found = [os.path.join(root, name) for root, _, names in os.walk(out) for name in names if name == "checks.json"]
        self.assertEqual(len(found), 1, proc.stdout[-2000:] + proc.stderr[-2000:])
        with open(found[0]) as f:
            checks = json.load(f)
        self.assertEqual([(c["id"], c.get("errorMessage")) for c in checks if c["status"] != "SUCCESS"], [])
        self.assertGreaterEqual(len(checks), 8)


class ReviewTests(ScratchDir):
    """Where two features of the round meet."""

    def test_a_cached_result_never_links_another_sessions_output(self):
        # A result cut to its budget links an output only its session may read: it is not cached, so a
        # second HTTP session (same caller, shared cache) gets its own output, which it can read.
        path = os.path.join(self.dir, "cache.json")
        with open(path, "w") as f:
            json.dump({"max_text": 200, "tools": [{"name": "big", "command": "seq 1 500", "cache": {
                "ttl": 300, "shared": True}, "annotations": {"readOnlyHint": True}}]}, f)
        with HttpServerProcess("serve", "--config", path) as server:
            for session in (server.initialize_session(), server.initialize_session()):
                status, _, text = server.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                    "name": "big", "arguments": {}}}, session=session)
                result = server.messages(text)[-1]["result"]
                self.assertNotIn("mcpstudio/cached", result.get("_meta") or {})
                link = [item["uri"] for item in result["content"] if item["type"] == "resource_link"][0]
                status, _, text = server.post({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {
                    "uri": link}}, session=session)
                self.assertTrue(server.messages(text)[-1]["result"]["contents"][0]["text"].endswith("499\n500\n"))

    def test_inspect_search_without_tool_search_says_why(self):
        # A server with no tool search (a config without MCP servers): the user learns where it applies,
        # rather than "Unknown tool: mcpstudio__search_tools".
        out = subprocess.run(SERVER + ["inspect", "--search", "say", "echo", "{message}"], capture_output=True,
                             text=True, timeout=WAIT, stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("this server has no tool search (mcpstudio serves one for a config with MCP servers", out.stderr)

    def test_a_file_tools_confirmation_and_audit_name_what_runs(self):
        # A file parameter's value is a data: URI, the command gets a path made when it runs: the question and
        # the audit show the file by its digest (not the base64), and two files are two cache entries.
        audit = os.path.join(self.dir, "audit.jsonl")
        path = os.path.join(self.dir, "files.json")
        with open(path, "w") as f:
            json.dump({"audit": {"file": audit}, "confirm": True, "tools": [
                {"name": "show", "command_template": "cat -- {file}", "parameters": {"file": {"type": "file"}},
                 "annotations": {"readOnlyHint": True}, "cache": {"ttl": 300}}]}, f)
        with McpProcess("serve", "--config", path) as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                          "clientInfo": {"name": "t", "version": "0"}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            for call_id, text in ((2, "one\n"), (3, "two\n")):
                server.send({"jsonrpc": "2.0", "id": call_id, "method": "tools/call", "params": {"name": "show",
                             "arguments": {"file": "data:text/plain;base64," + base64.b64encode(text.encode()).decode()}}})
                self.assertTrue(wait_until(lambda: server.notifications_of("elicitation/create")), server.context())
                with server.lock:
                    asked = server.notifications.pop()
                self.assertRegex(asked["params"]["message"], r"^Allow show to run `cat -- '<file [0-9a-f]{16}>'`\?\n"
                                 r"The command, word by word: \[\"cat\", \"--\", \"<file [0-9a-f]{16}>\"\]$")
                server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"run": True}}})
                self.assertEqual(text_of(server.wait_response(call_id)["result"]), text)
        with open(audit, encoding="utf-8") as f:
            argvs = [json.loads(line)["argv"] for line in f]
        self.assertEqual(len({argv[2] for argv in argvs}), 2, argvs)

    def test_metrics_stay_bounded_whatever_uris_a_client_reads(self):
        # Each resources/read had a series per URI (21 lines each in /metrics, kept forever): a client reading
        # made-up URIs grew the server's memory and /metrics without bound. Now one series for the method.
        import urllib.request
        with HttpServerProcess("echo", "{message}") as server:
            session = server.initialize_session()
            for number in range(5):
                server.post({"jsonrpc": "2.0", "id": number + 2, "method": "resources/read", "params": {
                    "uri": "x://made-up-%d" % number}}, session=session)
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % server.port, timeout=WAIT) as response:
                text = response.read().decode()
        self.assertNotIn("made-up", text)
        self.assertIn('mcpstudio_errors_total{tool="resources/read"} 5', text)

    def test_a_urls_password_never_names_its_server(self):
        # --url's server was named by the URL's netloc, user and password included: every line about it
        # (here: it failed to start) and its status showed the password.
        out = subprocess.run(SERVER + ["inspect", "--url", "http://someone:pw-7355608@127.0.0.1:9/mcp"],
                             capture_output=True, text=True, timeout=WAIT, stdin=subprocess.DEVNULL)
        self.assertIn("server `127_0_0_1_9` failed to start", out.stderr)
        self.assertNotIn("7355608", out.stdout + out.stderr)

    def test_a_2024_client_gets_no_resource_link(self):
        # resource_link content came with 2025-06-18: an older client gets the line that names the output, which
        # it can read, and no content item of a type its schema lacks (as the README says).
        for version, types in (("2024-11-05", ["text"]), ("2025-06-18", ["text", "resource_link"])):
            with McpProcess("--max-text", "100", "seq", "1", "{count}") as server:
                server.request("initialize", {"protocolVersion": version, "capabilities": {},
                                              "clientInfo": {"name": "t", "version": "0"}})
                server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
                result = server.call("seq", {"count": "300"})
                self.assertEqual([item["type"] for item in result["content"]], types)
                uri = re.search(r"the whole output is (\S+)", text_of(result)).group(1)
                read = server.request("resources/read", {"uri": uri + "?lines=300-"})
                self.assertEqual(read["result"]["contents"][0]["text"], "300\n")


    def test_max_text_in_a_config_is_positive_as_the_flag_is(self):
        # --max-text 0 was refused, "max_text": 0 (or -3) in a config took every output away without a word.
        for data, key in (({"max_text": 0}, "max_text"), ({"tools": [{"name": "e", "command": "echo {m}", "max_text": -3}]},
                                                          "tools[0].max_text")):
            path = os.path.join(self.dir, "text.json")
            with open(path, "w") as f:
                json.dump(dict({"tools": [{"name": "e", "command": "echo {m}"}]}, **data), f)
            out = subprocess.run(SERVER + ["check", "--config", path], capture_output=True, text=True, timeout=WAIT,
                                 stdin=subprocess.DEVNULL)
            self.assertEqual(out.returncode, 1, out.stderr)
            self.assertIn("%s: %s: expected a positive whole number of characters" % (path, key), out.stderr)

    def test_a_confirmed_2026_call_spends_one_token(self):
        # 2026-07-28 asks by answering input_required and running the retry: the round that asked took the rate
        # limit's token (and counted as a call), so with 1 call per 600 s the confirmed retry was refused.
        path = os.path.join(self.dir, "confirm.json")
        with open(path, "w") as f:
            json.dump({"tools": [{"name": "hello", "command": "echo hello", "confirm": True,
                                  "rateLimit": {"calls": 1, "seconds": 600}}]}, f)
        with HttpServerProcess("serve", "--config", path) as server:
            meta = dict(MODERN_META, **{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})

            def call(extra):
                params = dict({"name": "hello", "arguments": {}, "_meta": meta}, **extra)
                return server.messages(server.modern("tools/call", params)[2])[-1]["result"]
            self.assertEqual(call({})["resultType"], "input_required")
            yes = call({"inputResponses": {"confirm": {"action": "accept", "content": {"run": True}}}})
            self.assertEqual(text_of(yes), "hello\n")
            self.assertGreater(call({})["_meta"]["mcpstudio/retryAfter"], 500)  # the one call is spent
            import urllib.request
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % server.port, timeout=WAIT) as response:
                metrics = response.read().decode()
        self.assertIn('mcpstudio_calls_total{tool="hello"} 2', metrics)  # the run and the refused third

    def test_a_header_in_a_servers_args_is_masked(self):
        # mcp-remote's way to pass a token, `--header "Authorization: Bearer T"`, showed T in status, the TUI and
        # servers_list (what a model reads); `mask_secrets` masked options and URLs, not headers.
        for text, masked in (("Authorization: Bearer abc123", "Authorization: Bearer ***"),
                             ("--header 'Authorization: Basic dXNlcjpwYXNz' x", "--header 'Authorization: Basic ***' x"),
                             ("X-Api-Key: k123", "X-Api-Key: ***"), ("--header X-Auth-Token:t0k", "--header X-Auth-Token:***"),
                             ("Content-Type: application/json", "Content-Type: application/json"),
                             ("https://h/mcp at 12:30:00", "https://h/mcp at 12:30:00")):
            self.assertEqual(mcpstudio.mask_secrets(text), masked)
        path = os.path.join(self.dir, "remote.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {"remote": {"command": "npx", "args": [
                "-y", "mcp-remote", "https://example.com/mcp", "--header", "Authorization: Bearer literal-7355608"]}}}, f)
        out = subprocess.run(SERVER + ["status", "--config", path], capture_output=True, text=True, timeout=WAIT,
                             stdin=subprocess.DEVNULL)
        self.assertIn("--header 'Authorization: Bearer ***'", out.stdout)
        self.assertNotIn("7355608", out.stdout + out.stderr)

    def test_a_respelled_name_is_confirmed_and_masked_as_the_listed_one(self):
        # `remove_file` reaches the tool listed as `remove-file`, but the guard looked its listing up by the name
        # called: no destructiveHint (so no confirmation) and no secret parameter (so the audit showed it).
        audit = os.path.join(self.dir, "audit.jsonl")
        path = os.path.join(self.dir, "loose.json")
        with open(path, "w") as f:
            json.dump({"confirm": "destructive", "audit": {"file": audit}, "tools": [{
                "name": "remove-file", "command_template": "echo removed {path} {pin}",
                "annotations": {"destructiveHint": True},
                "parameters": {"path": {"type": "string"}, "pin": {"type": "string", "secret": True}}}]}, f)
        with McpProcess("serve", "--config", path) as server:
            server.initialize()  # no elicitation: a tool that needs confirmation is not run
            for name in ("remove-file", "remove_file"):
                result = server.call(name, {"path": "a", "pin": "pin-7355608"})
                self.assertIn("needs the user's confirmation", text_of(result))
        with open(audit, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual([line["tool"] for line in lines], ["remove-file", "remove-file"])
        self.assertNotIn("7355608", json.dumps(lines))

class NamespaceUrlTests(AggregatorCase):
    """Issue 28: /mcp/<namespace> on --http serves the namespace's tool set over the same running servers."""

    def tools(self, http, path):
        http.path = path
        status, _, text = http.modern("tools/list")
        self.assertEqual(status, 200, text)
        return [tool["name"] for tool in http.messages(text)[0]["result"]["tools"]]

    def call(self, http, path, name, arguments):
        http.path = path
        status, _, text = http.modern("tools/call", {"name": name, "arguments": arguments})
        self.assertEqual(status, 200, text)
        answer = http.messages(text)[0]
        return text_of(answer["result"]) if "result" in answer else answer["error"]["message"]

    def test_each_namespace_url_lists_and_calls_its_own_tools(self):
        fake = [self.fake, "--pidfile", self.pids, "--only", "echo,env", "--name"]
        path = os.path.join(self.dir, "ns.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {"alpha": {"command": PY, "args": fake + ["alpha"]},
                                      "beta": {"command": PY, "args": fake + ["beta"]}},
                       "namespaces": {"work": {"servers": ["alpha"], "tools": {"deny": ["alpha__env"]}},
                                      "play": {"servers": ["alpha", "beta"], "toolSearch": "on"},
                                      "spare": ["beta"]},
                       "defaultNamespace": "work"}, f)
        with HttpServerProcess("--config", path, "--no-manager-tools", env=self.env) as http:
            self.assertEqual(self.tools(http, "/mcp"), ["alpha__echo"])
            self.assertEqual(self.tools(http, "/mcp/work"), ["alpha__echo"])
            self.assertEqual(self.tools(http, "/mcp/play"), ["mcpstudio__search_tools", "mcpstudio__call_tool"])
            self.assertEqual(self.call(http, "/mcp", "alpha__echo", {"text": "one"}), "alpha: one")
            self.assertEqual(self.call(http, "/mcp/play", "mcpstudio__call_tool",
                                       {"name": "alpha__echo", "arguments": {"text": "two"}}), "alpha: two")
            denied = self.call(http, "/mcp", "beta__echo", {"text": "x"})  # beta is not in the default namespace
            self.assertIn("Unknown tool: beta__echo", denied)
            self.assertEqual(self.call(http, "/mcp/play", "beta__echo", {"text": "three"}), "beta: three")
            http.path = "/mcp/nope"
            status, _, text = http.modern("tools/list")
            self.assertEqual(status, 404)
            self.assertIn("no namespace 'nope' (the config's namespaces: play, spare, work)", text)
            http.path = "/mcp/play"  # a handshake-era session of the namespace's URL
            session = http.initialize_session()
            status, _, text = http.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, session=session)
            self.assertEqual([t["name"] for t in http.messages(text)[0]["result"]["tools"]][:1], ["mcpstudio__search_tools"])
            with open(self.pids) as f:  # alpha served both URLs from one process
                pids = [line.split() for line in f]
            self.assertEqual(sorted(line[2] for line in pids), ["alpha", "beta"])
            with open(path, "w") as f:  # a namespace first asked for after the config broke: a 500 that says why
                f.write("{")
            http.path = "/mcp/spare"
            status, _, text = http.modern("tools/list")
            self.assertEqual(status, 500, text)
            self.assertIn("ns.json", text)
        self.assertTrue(wait_until(lambda: not any(alive(int(pid)) for line in pids for pid in line[:2]), 10))

    def test_every_url_passes_the_one_guard(self):
        # A caller's rate limit counts its calls through every URL (one quota, not one per namespace).
        fake = [self.fake, "--only", "echo", "--name"]
        path = os.path.join(self.dir, "ns.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {"alpha": {"command": PY, "args": fake + ["alpha"]}},
                       "namespaces": {"work": ["alpha"], "play": ["alpha"]}, "defaultNamespace": "work",
                       "rateLimit": {"calls": 1, "seconds": 600}}, f)
        with HttpServerProcess("--config", path, "--no-manager-tools", env=self.env) as http:
            self.assertEqual(self.call(http, "/mcp", "alpha__echo", {"text": "one"}), "alpha: one")
            self.assertRegex(self.call(http, "/mcp/play", "alpha__echo", {"text": "two"}), r"^Not run: .*retry in")

    def test_cache_keyed_by_server_not_public_name(self):
        # Issue 41.2: one MCP server twice (a work and a personal account), each `"prefix": ""` in a namespace of
        # its own, both cached: /mcp/personal gets the personal server's answer, never the work one's entry.
        fake = [self.fake, "--only", "echo", "--name"]
        path = os.path.join(self.dir, "ns.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {name: {"command": PY, "args": fake + [name], "prefix": "", "cache": {"ttl": 600}}
                                      for name in ("work", "personal")},
                       "namespaces": {"work": ["work"], "personal": ["personal"]}, "defaultNamespace": "work"}, f)
        with HttpServerProcess("--config", path, "--no-manager-tools", env=self.env) as http:
            self.assertEqual(self.call(http, "/mcp/work", "echo", {"text": "me"}), "work: me")
            self.assertEqual(self.call(http, "/mcp/personal", "echo", {"text": "me"}), "personal: me")
            self.assertEqual(self.call(http, "/mcp/work", "echo", {"text": "me"}), "work: me")

    def test_a_namespace_urls_session_hears_its_servers_list_changes(self):
        from http.client import HTTPConnection
        path = os.path.join(self.dir, "ns.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {name: {"command": PY, "args": [self.fake, "--name", name]} for name in ("alpha", "beta")},
                       "namespaces": {"work": ["alpha"], "play": ["beta"]}, "defaultNamespace": "work"}, f)
        with HttpServerProcess("--config", path, env=self.env) as http:  # beta's five tools, cached
            self.assertEqual(self.call(http, "/mcp/play", "beta__echo", {"text": "one"}), "beta: one")
        with HttpServerProcess("--config", path, "--no-manager-tools", env=dict(self.env, FAKE_ONLY="echo")) as http:
            http.path = "/mcp/play"
            session = http.initialize_session()
            self.assertIn("beta__sleep", self.tools(http, "/mcp/play"))  # from the cache
            connection = HTTPConnection("127.0.0.1", http.port, timeout=WAIT)
            connection.request("GET", "/mcp/play", headers={"Accept": "text/event-stream", "Mcp-Session-Id": session})
            stream = connection.getresponse()
            self.assertEqual(stream.status, 200)
            self.assertEqual(self.call(http, "/mcp/play", "beta__echo", {"text": "two"}), "beta: two")  # beta starts
            line, deadline = b"", time.monotonic() + WAIT
            while b"notifications/tools/list_changed" not in line:  # its live tools differ from the cache's
                self.assertLess(time.monotonic(), deadline, "no list_changed on the session's stream")
                line = stream.readline()
                self.assertTrue(line, "the stream ended without list_changed")
            connection.close()
            self.assertEqual(self.tools(http, "/mcp/play"), ["beta__echo"])


class TemplateFileFieldTests(ScratchDir):
    def test_parse(self):
        # `{name:file}` is a file field: a string property that takes a data: URI, shown back as written, and a
        # name used both as a file and as a plain string is the author's mistake.
        template = Template(["wc", "-c", "{photo:file # the picture}", "[--all]"])
        prop = template.input_schema()["properties"]["photo"]
        self.assertEqual(prop["type"], "string")
        self.assertTrue(prop["description"].startswith("the picture: a file, as data:"), prop)
        self.assertIn("resource URI", prop["description"])
        self.assertEqual(template.fields["photo"].kind, "file")
        self.assertEqual(template.display(), "wc -c {photo:file} [--all]")
        with self.assertRaises(TemplateError) as cm:
            Template(["cp", "{x:file}", "{x}"])
        self.assertIn("a file and as a string", str(cm.exception))

    @unittest.skipUnless(shutil.which("sha256sum"), "needs sha256sum")
    def test_png_reaches_the_command(self):
        # A PNG given as a data URI reaches `sha256sum {photo:file}` as a file with the same bytes, and the
        # private folder it was written to is gone after the call.
        png = b"\x89PNG\r\n\x1a\n" + os.urandom(300)
        with McpProcess("sha256sum", "{photo:file}") as server:
            server.initialize()
            prop = server.request("tools/list")["result"]["tools"][0]["inputSchema"]["properties"]["photo"]
            self.assertIn("data:", prop["description"])
            result = server.call("sha256sum", {"photo": "data:image/png;name=in.png;base64," + base64.b64encode(png).decode()})
            self.assertFalse(result["isError"], result)
            sha, path = text_of(result).split()
            self.assertEqual(sha, hashlib.sha256(png).hexdigest())
            self.assertEqual(os.path.basename(path), "in.png")
            parent = os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(path))))
            self.assertTrue(parent.startswith("mcpstudio-"), path)  # TMPDIR/mcpstudio-USER/PID-RANDOM/photo/in.png
            self.assertFalse(os.path.exists(os.path.dirname(os.path.dirname(path))))
            bad = server.call("sha256sum", {"photo": "/etc/passwd"})
            self.assertTrue(bad["isError"])
            self.assertIn("`photo` is a file", text_of(bad))

    @unittest.skipUnless(shutil.which("cp"), "needs cp")
    def test_output_folder_field(self):
        # `{out:folder}` is no property: mcpstudio gives the command a fresh folder there, and the files the
        # command leaves in it come back as content (a PNG as image content), in template and config mode.
        template = Template(["cp", "pic.png", "{out:folder}"])
        self.assertEqual((template.input_schema()["properties"], template.folder()), ({}, "out"))
        self.assertEqual(template.display(), "cp pic.png {out:folder}")
        png = b"\x89PNG\r\n\x1a\n" + os.urandom(200)
        with open(os.path.join(self.dir, "pic.png"), "wb") as f:
            f.write(png)
        image = {"type": "image", "data": base64.b64encode(png).decode(), "mimeType": "image/png"}
        config = os.path.join(self.dir, "draw.json")
        with open(config, "w") as f:
            json.dump({"tools": [{"name": "draw", "command": "cp %s {out:folder}" % os.path.join(self.dir, "pic.png")}]}, f)
        for args in (["--cwd", self.dir, "cp", "pic.png", "{out:folder}"], ["serve", "--config", config]):
            with McpProcess(*args) as server:
                server.initialize()
                tool = server.request("tools/list")["result"]["tools"][0]
                self.assertEqual(tool["inputSchema"]["properties"], {})
                result = server.call(tool["name"], {})
                self.assertFalse(result["isError"], result)
                self.assertIn(image, result["content"])

    @unittest.skipUnless(shutil.which("wc"), "needs wc")
    def test_config_template_file_field(self):
        # In a config tool `{name:file}` is a file too, with or without a declared `"type": "file"` parameter.
        config = os.path.join(self.dir, "files.json")
        with open(config, "w") as f:
            json.dump({"tools": [
                {"name": "size", "command": "wc -c {doc:file}"},
                {"name": "declared", "command": "wc -c {doc:file}",
                 "parameters": {"doc": {"type": "file", "description": "A document"}}}]}, f)
        with McpProcess("serve", "--config", config) as server:
            server.initialize()
            for tool in ("size", "declared"):
                result = server.call(tool, {"doc": "data:text/plain;name=a.txt;base64," + base64.b64encode(b"12345").decode()})
                self.assertFalse(result["isError"], result)
                self.assertEqual(text_of(result).split()[0], "5")
                self.assertEqual(os.path.basename(text_of(result).split()[1]), "a.txt")


class RunningStatsTests(AggregatorCase):
    """Issue 30 item 5: a running serve's per-tool counters in `status` and the TUI, from the file it publishes."""

    def setUp(self):
        super().setUp()
        self.counter = self.script("counter.py", GUARD_COUNTER, executable=False)
        self.cache = os.path.join(self.dir, "cache", "mcpstudio")

    def config(self, name="guard.json", **top):
        path = os.path.join(self.dir, name)
        command = "%s %s %s {word}" % (PY, self.counter, os.path.join(self.dir, "runs"))
        with open(path, "w") as f:
            json.dump(dict({"tools": [
                {"name": "look", "command": command, "annotations": {"readOnlyHint": True}, "cache": {"ttl": 600}},
                {"name": "fail", "command": command + " 3"}]}, **top), f)
        return path

    def status(self, path) -> str:
        proc = subprocess.run(SERVER + ["status", "--config", path], capture_output=True, text=True, timeout=WAIT,
                              env=self.env, stdin=subprocess.DEVNULL)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc.stdout

    def published_files(self) -> list:
        return [name for name in os.listdir(self.cache) if name.startswith("running-")] if os.path.isdir(self.cache) else []

    def published(self, pid, calls):
        """The serving process's file, once it counts `calls` calls in all (it writes within a second)."""
        path = os.path.join(self.cache, "running-%d.json" % pid)

        def counted():
            try:
                with open(path, encoding="utf-8") as f:
                    return sum(counts["calls"] for counts in json.load(f)["tools"].values()) == calls
            except (OSError, ValueError):
                return False  # not written yet
        self.assertTrue(wait_until(counted), self.published_files())
        return path

    def test_table(self):
        row = {"calls": 12, "error": 1, "rateLimited": 2, "cached": 3, "refused": 0, "p50Ms": 4.5, "p90Ms": 10.0, "p99Ms": 1234.5}
        header = "  CALLS ERRORS LIMITED CACHED REFUSED  P50 MS  P90 MS  P99 MS"
        for tools, lines in (
                ({}, ["TOOL" + header]),
                ({"b": row, "a": dict(row, calls=1)},
                 ["TOOL" + header, "a         1      1       2      3       0     4.5    10.0  1234.5",
                  "b        12      1       2      3       0     4.5    10.0  1234.5"]),
                ({"github__search_code": row},  # a long name widens the first column
                 ["TOOL" + " " * 15 + header, "github__search_code     12      1       2      3       0     4.5    10.0  1234.5"])):
            self.assertEqual(mcpstudio.RunningStats.table(tools), lines)

    def test_status_shows_a_running_serve_until_it_exits(self):
        path, other = self.config(), self.config("other.json")
        with McpProcess("serve", "--config", path, env=self.env) as server:
            server.initialize()
            self.assertEqual(self.published_files(), [])  # nothing to report before a call
            for tool in ("look", "look", "fail"):
                server.call(tool, {"word": "a"})
            published = self.published(server.proc.pid, 3)
            if mcpstudio._POSIX:
                self.assertEqual(os.stat(published).st_mode & 0o777, 0o600)
            text = self.status(path)
            self.assertRegex(text, r"\nrunning: serve pid %d \(stdio\) since 20\d\d-\d\d-\d\dT[\d:]+Z; per tool since then:\n"
                                   r"  TOOL +CALLS ERRORS LIMITED CACHED REFUSED  P50 MS  P90 MS  P99 MS\n" % server.proc.pid)
            self.assertRegex(text, r"\n  fail +1 +1 +0 +0 +0 +[\d.]+ +[\d.]+ +[\d.]+\n")
            self.assertRegex(text, r"\n  look +2 +0 +0 +1 +0 +[\d.]+ +[\d.]+ +[\d.]+\n")  # the second from the cache
            self.assertNotIn("running:", self.status(other))  # another config's status
            server.call("fail", {"word": "b"})  # a call within the second after the last write is written too
            self.published(server.proc.pid, 4)
            self.assertEqual(server.close(), 0)
        self.assertEqual(self.published_files(), [])  # removed at exit
        self.assertNotIn("running:", self.status(path))

    def test_http_serve_and_a_dead_process(self):
        path = self.config()
        with HttpServerProcess("serve", "--config", path, env=self.env) as server:
            status, _, body = server.modern("tools/call", {"name": "fail", "arguments": {"word": "h"}})
            self.assertEqual(status, 200, body)
            self.published(server.proc.pid, 1)
            self.assertRegex(self.status(path), r"running: serve pid %d \(http\)[^\n]*\n.*\n  fail +1 +1 " % server.proc.pid)
            self.assertTrue(mcpstudio._process_alive(server.proc.pid))
            server.proc.kill()  # no exit handler runs: its file stays, with a pid that is gone
            server.proc.wait(WAIT)
            self.assertFalse(mcpstudio._process_alive(server.proc.pid))
        stale = os.path.join(self.cache, "running-%d.json" % server.proc.pid)
        self.assertTrue(os.path.exists(stale))
        self.assertNotIn("running:", self.status(path))  # ignored, and removed
        self.assertFalse(os.path.exists(stale))

    def serve_servers(self):
        """A serve of a config with one MCP server, `good`, whose echo was called once."""
        path = os.path.join(self.dir, "servers.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {"good": {"command": PY, "args": [self.fake, "--name", "good"]}}}, f)
        server = McpProcess("serve", "--config", path, env=self.env)
        self.addCleanup(server.__exit__)
        server.initialize()
        self.assertEqual(text_of(server.call("good__echo", {"text": "hi"})), "good: hi")
        self.published(server.proc.pid, 1)
        return path, server

    @unittest.skipUnless(PYTE is not None and hasattr(os, "openpty") and sys.platform != "win32",
                         "needs pyte (pip install pyte; .ci/run installs it) and a POSIX pseudo-terminal")
    def test_tui_details_show_the_selected_tools_counters(self):
        path, server = self.serve_servers()
        tui = TuiSession("--config", path, env=self.env)
        self.addCleanup(lambda: tui.proc.poll() is None and tui.close())
        tui.wait_for("SERVER", "good")
        tui.press("\r")  # details, the first tool (echo) selected
        tui.wait_for("tools (5):", "serve pid %d: 1 calls, 0 errors" % server.proc.pid)
        tui.press("j")  # the next tool was not called
        self.assertTrue(wait_until(lambda: "serve pid" not in tui.text()), tui.text())

    def test_board_shows_the_selected_tools_counters(self):
        path, server = self.serve_servers()
        from unittest import mock
        with mock.patch.dict(os.environ, XDG_CACHE_HOME=self.env["XDG_CACHE_HOME"]):
            board = mcpstudio.Board(path)
            self.addCleanup(lambda: board.loop.close() if wait_until(lambda: not board.loop.is_running()) else None)
            self.addCleanup(board.close)  # stops its loop (then closed, above)
            tools = {tool["name"]: tool for tool in board.details("good")["tools"]}  # from the listing cache
        self.assertRegex(tools["echo"]["counters"][0], r"^serve pid %d: 1 calls, 0 errors, 0 rate-limited, 0 cached, "
                                                       r"0 refused; p50 [\d.]+ ms, p90 [\d.]+ ms, p99 [\d.]+ ms$" % server.proc.pid)
        self.assertEqual(tools["sleep"]["counters"], [])  # a tool not called


class LeftoverTests(ScratchDir):
    """Stop 34's "noticed and left alone", each driven as a person or client would."""

    def test_inspect_of_a_dead_url_fails_naming_it(self):
        # Nothing listens on the port: inspect exited 0 with an empty list; now it fails naming the URL and why.
        port = free_port()
        url = "http://127.0.0.1:%d/mcp" % port
        out = subprocess.run(SERVER + ["inspect", "--url", url], capture_output=True, text=True, timeout=WAIT,
                             stdin=subprocess.DEVNULL)
        self.assertNotEqual(out.returncode, 0, out.stdout)
        self.assertIn("error: server `127_0_0_1_%d` (%s) failed to start: the connection failed" % (port, url), out.stderr)
        self.assertNotIn("tools (0)", out.stdout)

    def test_tools_list_fails_only_when_every_server_failed(self):
        # A broken server beside one still starting: the listing is what is known (nothing yet) and list_changed
        # brings the rest; it was a -32001 error that a client may take as the end of the server. With every
        # server failed, tools/list says why, secrets masked, and what to do.
        slow = [PY, "-c", "import os, sys, time; time.sleep(2.5); os.execv(sys.executable, [sys.executable] + sys.argv[1:])",
                MODULE, "echo", "{message}"]
        broken = {"command": PY, "args": ["-c", "import sys; sys.stderr.write('retry with --token=abc123456\\n'); sys.exit(2)"]}
        for servers, listed in (({"broken": broken, "slow": {"command": slow[0], "args": slow[1:]}}, True),
                                ({"broken": broken}, False)):
            path = os.path.join(self.dir, "servers.json")
            with open(path, "w") as f:
                json.dump({"mcpServers": servers}, f)
            with McpProcess("serve", "--config", path, "--no-manager-tools",
                            env=dict(os.environ, MCPSTUDIO_LIST_WAIT="1", XDG_CACHE_HOME=self.dir)) as server:
                server.initialize()
                reply = server.request("tools/list")
                if listed:
                    self.assertEqual(reply["result"]["tools"], [], reply)
                    self.assertTrue(wait_until(lambda: server.notifications_of("notifications/tools/list_changed")),
                                    server.context())
                    self.assertEqual([t["name"] for t in server.request("tools/list")["result"]["tools"]], ["slow__echo"])
                else:
                    message = reply["error"]["message"]
                    self.assertIn("server `broken`", message)
                    self.assertIn("retry with --token=***", message)
                    self.assertNotIn("abc123456", message)
                    self.assertTrue(message.endswith("; fix it and restart mcpstudio"), message)

    def test_a_tool_dropped_while_the_user_answers_still_runs(self):
        # tools_call read the tool's listing after asking the user: a rescan that dropped it meanwhile made the
        # call an internal error (KeyError); the listing is read before any await now.
        class Source(mcpstudio.Source):
            present = True

            async def list_tools(self):
                return [{"name": "t", "inputSchema": {"type": "object"}}] if self.present else []

            def question(self, name, arguments):
                return mcpstudio.elicitation_form("who?", {"who": {"type": "string"}})

            async def call_tool(self, name, arguments, ctx):
                return {"content": [{"type": "text", "text": "ran %s for %s" % (name, arguments["who"])}]}

        source = Source()
        catalog = mcpstudio.Catalog([source])
        server = mcpstudio.Server(catalog, mcpstudio.Log())

        async def ask(form, params, ctx, key):
            source.present = False  # a rescan drops the tool while the person answers
            await catalog.tools()
            return {"action": "accept", "content": {"who": "me"}}

        async def call():
            await catalog.tools()
            import types
            session = types.SimpleNamespace(client_capabilities={"elicitation": {}}, log_level=None, closed=False,
                                            caller=None, label="test", protocol_version="2025-06-18",
                                            client_info={}, notify=lambda *a, **k: None)
            return await server.tools_call({"name": "t", "arguments": {}}, mcpstudio.CallContext(session, 1))
        server._ask = ask
        self.assertEqual(text_of(asyncio.run(call())), "ran t for me")

    def test_one_secret_rule_masks_the_union(self):
        # What status/the TUI/servers_list masked (URLs, secret-looking options and headers) and what the audit
        # masked (values marked secret, also inside lists and objects) are masked by the one mask_secrets.
        for value, secrets, expected in (
                ("npx r https://u:pw@h/mcp?key=k1 --api-key a1 --token=t1 API_KEY=e1 --name n", (),
                 "npx r https://u:***@h/mcp?key=*** --api-key *** --token=*** API_KEY=*** --name n"),
                ("--header 'Authorization: Bearer b1'", (), "--header 'Authorization: Bearer ***'"),
                ("ran hunter2 and hunter2", ("hunter2",), "ran *** and ***"),
                ({"argv": ["curl", "--password=p1", "https://me:p2@h/x", "hunter2"], "arguments": {"q": ["a hunter2"], "hunter2": 1},
                  "exitCode": 0, "error": None, "isError": False},
                 ("hunter2",), {"argv": ["curl", "--password=***", "https://me:***@h/x", "***"],
                                "arguments": {"q": ["a ***"], "***": 1}, "exitCode": 0, "error": None, "isError": False}),
                ("Content-Type: text/plain --verbose 12:30", ("absent",), "Content-Type: text/plain --verbose 12:30")):
            with self.subTest(value=value):
                self.assertEqual(mcpstudio.mask_secrets(value, secrets), expected)

    def test_masking_is_linear_in_the_text(self):
        # A URL looked for from every letter of `a.a.a...` made one 100 KB argument stall the audited server 6 s
        # (1 MB: minutes); a URL is looked for where a run of URL characters begins only.
        started = time.monotonic()
        for text in ("a." * 500000, "a-" * 500000, "--a" * 300000):
            self.assertEqual(mcpstudio.mask_secrets(text), text)
        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual(mcpstudio.mask_secrets("see x.https://u:pw@h/ and 'ftp://h/?key=k'"),
                         "see x.https://u:***@h/ and 'ftp://h/?key=***'")

    def test_the_audit_line_masks_what_status_masks(self):
        # A password in a URL argument and a literal --password=V in the command were written to the audit log in
        # clear: the audit masked only values of secret-named or writeOnly arguments and the config's secrets.
        show = self.script("show.py", "import sys\nprint(len(sys.argv))\n", False)
        audit, path = os.path.join(self.dir, "audit.jsonl"), os.path.join(self.dir, "audit.json")
        with open(path, "w") as f:
            json.dump({"audit": {"file": audit}, "tools": [
                {"name": "fetch", "command": "%s %s {url} {api_key} --password=literal-7355608" % (PY, show)}]}, f)
        with McpProcess("serve", "--config", path) as server:
            server.initialize()
            result = server.call("fetch", {"url": "https://me:pw-7355608@example.com/x", "api_key": "k"})
            self.assertEqual(text_of(result), "4\n")
        with open(audit, encoding="utf-8") as f:
            text = f.read()
        self.assertNotIn("7355608", text)
        line = json.loads(text)
        self.assertEqual(line["argv"][2:], ["https://me:***@example.com/x", "***", "--password=***"])  # however short
        self.assertEqual(line["arguments"], {"url": "https://me:***@example.com/x", "api_key": "***"})

    def test_the_audit_line_masks_a_secret_given_as_a_number(self):
        # A config secret (an env value) sent as a number argument was written in clear in `arguments`.
        show = self.script("show.py", "import sys\nprint(len(sys.argv))\n", False)
        audit, path = os.path.join(self.dir, "audit.jsonl"), os.path.join(self.dir, "audit.json")
        with open(path, "w") as f:
            json.dump({"audit": {"file": audit}, "tools": [
                {"name": "pin", "command": "%s %s {pin}" % (PY, show), "environment": {"API_TOKEN": "7355608"},
                 "parameters": {"pin": {"type": "integer"}}}]}, f)
        with McpProcess("serve", "--config", path) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("pin", {"pin": 7355608})), "2\n")
        with open(audit, encoding="utf-8") as f:
            line = json.loads(f.read())
        self.assertNotIn("7355608", json.dumps(line))
        self.assertEqual(line["arguments"], {"pin": "***"})

    def test_calls_cut_output_says_how_to_see_it_all(self):
        # The note named a kept output (and `call` a link to it) that the exited server could no longer serve.
        lines = self.script("lines.py", "import sys\nprint('\\n'.join(map(str, range(int(sys.argv[1])))))\n", False)
        for budget, expected in (("100", "rerun with a larger --max-text (or the config's max_text) to see them"),
                                 ("100000", "299\n")):
            mode = ["--max-text", budget, "--name", "lines", PY, lines, "{n}"]
            out = subprocess.run(SERVER + ["call", "lines", "n=300"] + mode, capture_output=True, text=True, timeout=WAIT,
                                 stdin=subprocess.DEVNULL)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn(expected, out.stdout)
            self.assertNotIn("mcpstudio://", out.stdout)


TMUX = shutil.which("tmux")


def descendants(pid) -> list:
    """The pids of every live process under `pid` (children, theirs, ...), read from /proc."""
    parents = {}
    for name in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % name) as f:
                parents[int(name)] = int(f.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            pass
    found, todo = [], [pid]
    while todo:
        children = [child for child, parent in parents.items() if parent == todo[-1]]
        todo.pop()
        found += children
        todo += children
    return [child for child in found if alive(child)]


class TmuxPane:
    """A command in the one pane of a private tmux server: a real terminal, whose scrolling regions, insert and
    delete line and resizes pyte lacks. Its screen is read with capture-pane, keys sent with send-keys, as the
    project's judges drive the TUI."""

    term = []  # the TERM inside: tmux-256color where its terminfo is installed, else screen

    def __init__(self, folder, command, env, cols=100, rows=30):
        self.socket = os.path.join(folder, "tmux")  # its server's own socket (-S), gone with the test's folder
        if not self.term:  # (the class's list: asked once)
            self.term.append("tmux-256color" if subprocess.run([PY, "-c", "import curses, sys; curses.setupterm(sys.argv[1], 1)",
                                                                "tmux-256color"], capture_output=True).returncode == 0 else "screen")
        env = {key: value for key, value in env.items() if key not in ("TMUX", "TMUX_PANE")}
        self.tmux("set-option", "-g", "default-terminal", self.term[0], ";", "set-option", "-g", "remain-on-exit", "on", ";",
                  "new-session", "-d", "-s", "tui", "-x", str(cols), "-y", str(rows), *command, env=env)
        self.pid = int(self.shown("pane_pid"))

    def tmux(self, *args, env=None) -> str:
        return subprocess.run([TMUX, "-S", self.socket, "-f", os.devnull] + list(args), capture_output=True, text=True,
                              timeout=WAIT, env=env, check=True, stdin=subprocess.DEVNULL).stdout

    def shown(self, name) -> str:
        return self.tmux("display-message", "-p", "-t", "tui", "#{%s}" % name).strip()

    def exit_status(self) -> str:
        """The pane's exit status, once its process exited. tmux 3.3a can miss the SIGCHLD of a pane whose pty closed
        first (its pid a zombie, the status empty, for good): a child of its own (run-shell) has it reap them all."""
        def reaped():
            self.tmux("run-shell", "true")
            return self.shown("pane_dead_status")
        wait_until(reaped, 5, 0.1)
        return self.shown("pane_dead_status")

    def kill(self):
        subprocess.run([TMUX, "-S", self.socket, "kill-server"], capture_output=True, timeout=WAIT)

    def lines(self) -> list:
        return [line.rstrip() for line in self.tmux("capture-pane", "-p", "-t", "tui").split("\n")[:-1]]

    def reversed_rows(self) -> list:
        """The rows whose first character shows in reverse video (the selection), from capture-pane -e's SGR codes."""
        rows, reverse = [], False
        for index, line in enumerate(self.tmux("capture-pane", "-p", "-e", "-t", "tui").split("\n")[:-1]):
            for codes, char in re.findall(r"\x1b\[([\d;]*)m|(\S)", line):
                if char:
                    rows += [index] * reverse
                    break
                for code in codes.split(";"):
                    reverse = {"": False, "0": False, "7": True, "27": False}.get(code, reverse)
        return rows

    def wait_for(self, *fragments, timeout=WAIT) -> list:
        if not wait_until(lambda: all(f in "\n".join(self.lines()) for f in fragments), timeout, 0.05):
            raise AssertionError("the pane never showed %r:\n%s" % (fragments, "\n".join(self.lines())))
        return self.lines()

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "tui", *keys)

    def type(self, text):
        self.tmux("send-keys", "-t", "tui", "-l", text)


@unittest.skipUnless(TMUX and sys.platform.startswith("linux"), "needs tmux (apt-get install tmux; .ci/run installs it) "
                     "and /proc")
class TuiTmuxTests(AggregatorCase):
    """The TUI in a real terminal (tmux), checked line by line as a person reads it."""

    upstream, config, all_gone = TuiTests.upstream, TuiTests.config, TuiTests.all_gone
    COLUMNS = "%-18s %-7s %-3s %-9s %5s  %-14s %s"
    HINT = "t:test Enter:details l:log e:on/off a:add d:remove n:namespace ?:help q:quit"

    def tui(self, path, cols=100, rows=30) -> TmuxPane:
        pane = TmuxPane(self.dir, [PY, MODULE, "tui", "--config", path], self.env, cols, rows)  # as a person runs it
        self.addCleanup(self.stop_leftovers)
        self.addCleanup(pane.kill)
        return pane

    def stop_leftovers(self):
        """After a failure: what the fake servers started, stopped (a passing test has left nothing)."""
        if os.path.exists(self.pids):
            with open(self.pids) as f:
                for pid in [int(p) for line in f for p in line.split()[:2]]:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)

    def quit(self, pane):
        """q quits: the pane's process exits 0 and leaves no process behind."""
        left = descendants(pane.pid)
        pane.keys("q")
        self.assertTrue(wait_until(lambda: pane.shown("pane_dead") == "1"), "\n".join(pane.lines()))
        self.assertEqual(pane.exit_status(), "0")
        self.assertTrue(wait_until(lambda: not any(alive(pid) for pid in left + [pane.pid]), 10),
                        [open("/proc/%d/cmdline" % pid).read() for pid in left if alive(pid)])
        self.assertTrue(self.all_gone())

    def wait_screen(self, pane, expected, timeout=WAIT):
        """The pane once it shows `expected` (its lines, trailing blanks dropped), or the test fails with a diff."""
        if not wait_until(lambda: pane.lines() == expected, timeout, 0.03):
            self.assertEqual(pane.lines(), expected)

    def wait_selection(self, pane, rows):
        """The pane once the rows in reverse video are `rows` (ncurses may set a row's text and its look in two writes)."""
        if not wait_until(lambda: pane.reversed_rows() == rows, 5, 0.03):
            self.assertEqual(pane.reversed_rows(), rows, "\n".join(pane.lines()))

    def list_screen(self, path, names, selected, cols, rows) -> list:
        """What the server list must show: title, header, the rows that keep the selection in view, the hint."""
        title = "mcpstudio  namespace: (all)  0 tools, under Cursor's 40  %s" % path
        top = max(0, selected - (rows - 6))
        lines = [title[:cols], self.COLUMNS % ("SERVER", "KIND", "ON", "STATE", "TOOLS", "NAMESPACES", "LAST ERROR")]
        lines += [self.COLUMNS % (name, "command", "yes", "stopped", "-", "-", "") for name in names[top:top + rows - 4]]
        lines += [""] * (rows - 1 - len(lines)) + [self.HINT[:cols - 1]]
        return [line.rstrip() for line in lines]

    def many(self, count=60):
        names = ["server-%02d" % index for index in range(count)]
        return names, self.config({name: self.upstream(name) for name in names})

    def test_select_details_call_and_quit(self):
        path = self.config({"good": self.upstream("good"), "other": self.upstream("other")})
        pane = self.tui(path)
        pane.wait_for("SERVER", "good", "other", "t:test")
        self.wait_selection(pane, [2, 29])  # good, and the hint
        pane.keys("Down")
        self.wait_selection(pane, [3, 29])
        pane.keys("k")
        self.wait_selection(pane, [2, 29])
        pane.keys("t")
        pane.wait_for("good is running: 5 tools")
        pane.keys("Enter")
        lines = pane.wait_for("tools (5):", "Echo text back")
        self.assertEqual(lines[1], "good  (running, enabled)")
        self.assertEqual(lines[2], ("command: %s %s --name good --pidfile %s" % (PY, self.fake, self.pids))[:100])
        self.wait_selection(pane, [4, 29])  # echo
        pane.keys("c")
        pane.wait_for("text (string, required)")
        pane.type("hi from tmux")
        pane.keys("Enter")
        lines = pane.wait_for("result of echo:", "good: hi from tmux")
        self.assertEqual(lines[lines.index("result of echo:") + 1], "good: hi from tmux")
        pane.keys("Escape")
        pane.wait_for("SERVER")
        self.quit(pane)

    def test_wide_names_keep_the_columns_and_help_fits_80_columns(self):
        # A server named in CJK (two cells a character) pushed its row's columns right; at 80 columns the help's
        # longest lines were cut.
        def cells(text):
            return sum(1 + (unicodedata.east_asian_width(char) in "WF") for char in text)
        import unicodedata
        names = ["db", "数据库", "数据库服务器集群管理系统"]
        pane = self.tui(self.config({name: self.upstream(name) for name in names}), 80, 24)
        lines = pane.wait_for("数据库", "数据库服务器集...")
        rows = [line for line in lines if line.startswith(("db ", "数据库"))]
        self.assertEqual(len(rows), 3, lines)
        for row in rows:  # KIND, and each column after it, at the same cell
            self.assertEqual(cells(row[:row.index(" command ")]), 18, row)
            self.assertEqual(cells(row[:row.index(" stopped ")]), 30, row)
        pane.keys("?")
        lines = pane.wait_for("q", "stops every server the TUI started")
        text = " ".join(" ".join(line.split()) for line in lines)
        for key, what in mcpstudio.TUI_KEYS:
            self.assertIn(" ".join([key] + what.split()), text)  # each said whole, on one line
        self.assertTrue(all(len(line) <= 80 for line in lines))
        pane.keys("Escape")
        pane.wait_for("SERVER")
        self.quit(pane)

    def test_a_long_list_scrolls_and_comes_back_unbroken(self):
        names, path = self.many()
        pane = self.tui(path)
        self.wait_screen(pane, self.list_screen(path, names, 0, 100, 30))
        # One key at a time: past the 26th row each Down scrolls the list a row, and Up back from 39 to 24 too.
        for key, selected in [("Down", index) for index in range(1, 41)] + [("Up", index) for index in range(39, 9, -1)]:
            pane.keys(key)
            self.wait_screen(pane, self.list_screen(path, names, selected, 100, 30))
            self.wait_selection(pane, [2 + min(selected, 24), 29])
        pane.keys(*["j"] * 55)  # keys faster than the draws: to the last server, and past it
        self.wait_screen(pane, self.list_screen(path, names, 59, 100, 30))
        self.wait_selection(pane, [26, 29])
        pane.keys(*["k"] * 59)
        self.wait_screen(pane, self.list_screen(path, names, 0, 100, 30))
        self.quit(pane)

    def test_a_resize_redraws_without_leftovers(self):
        names, path = self.many()
        pane = self.tui(path)
        pane.keys(*["j"] * 40)
        self.wait_screen(pane, self.list_screen(path, names, 40, 100, 30))
        for cols, rows in ((80, 24), (120, 40), (100, 30)):
            pane.tmux("resize-window", "-t", "tui", "-x", str(cols), "-y", str(rows))
            self.wait_screen(pane, self.list_screen(path, names, 40, cols, rows))
            self.wait_selection(pane, [2 + min(40, rows - 6), rows - 1])
        pane.keys("Enter")
        pane.wait_for("server-40  (stopped, enabled)")
        pane.tmux("resize-window", "-t", "tui", "-x", "60", "-y", "12")
        self.wait_screen(pane, [("mcpstudio  namespace: (all)  0 tools, under Cursor's 40  %s" % path)[:60],
                                "server-40  (stopped, enabled)",
                                ("command: %s %s --name server-40 --pidfile %s" % (PY, self.fake, self.pids))[:60],
                                "tools (0): not listed yet; t starts it"] + [""] * 7 +
                         ["c:call p:allow/deny t:test l:log Esc:back ?:help q:quit"])
        self.quit(pane)

    def test_a_filter_at_80_columns_leaves_the_header_readable(self):
        # The filter was written over the header's end: "NAMESPACES  /server-5ST ERROR".
        names, path = self.many()
        pane = self.tui(path, 80, 24)
        pane.wait_for("server-00")
        pane.keys("/")
        pane.type("server-5")
        pane.keys("Enter")
        expected = self.list_screen(path, names[50:], 0, 80, 24)
        expected[1] = expected[1][:60] + "/server-5"
        self.wait_screen(pane, expected)
        self.quit(pane)

    def test_a_long_tool_list_scrolls_in_the_details(self):
        path = self.config({"big": self.upstream("big", "--tools", "55")})
        pane = self.tui(path)
        pane.wait_for("big")
        pane.keys("t")
        pane.wait_for("big is running: 60 tools")
        pane.keys("Enter")
        lines = pane.wait_for("tools (60):")
        tools = [("echo", "Echo text back"), ("sleep", "Sleep, reporting progress"), ("crash", "Exit in the middle of the call"),
                 ("env", "Read a variable"), ("dotted.name/x", "A name clients reject")]
        body = lines[1:4] + ["  %-28s %-8s %-22s %s" % (name, "-", "", text)
                             for name, text in tools + [("t%04d" % index, "tool %d" % index) for index in range(55)]]
        self.assertEqual(lines[1:4], ["big  (running, enabled)", ("command: %s %s --name big --pidfile %s --tools 55"
                                                                  % (PY, self.fake, self.pids))[:100], "tools (60):"])

        def screen(tool, said="big is running: 60 tools"):  # the selected tool's line in view: on row 26 at most
            top = max(0, 3 + tool - 25)
            shown = body[top:top + 27]
            return [lines[0]] + shown + [""] * (27 - len(shown)) + [said, "c:call p:allow/deny t:test l:log Esc:back ?:help q:quit"]
        for key, tool in [("Down", index) for index in range(1, 51)] + [("Up", index) for index in range(49, 19, -1)]:
            pane.keys(key)
            self.wait_screen(pane, screen(tool))
            self.wait_selection(pane, [4 + tool - max(0, tool - 22), 29])
        pane.keys(*["k"] * 20)
        self.wait_screen(pane, screen(0))
        pane.keys("c")  # a call's result shows under its tool: it was after the 60th, off the screen
        pane.wait_for("text (string, required)")
        pane.type("hi")
        pane.keys("Enter")
        self.wait_screen(pane, [lines[0]] + body[:4] + ["result of echo:", "big: hi"] + body[4:25]
                         + ["echo of big answered", "c:call p:allow/deny t:test l:log Esc:back ?:help q:quit"])
        pane.keys(*["j"] * 59)  # the last tool's line still comes into view
        self.wait_screen(pane, screen(59, "echo of big answered"))
        self.quit(pane)

    def test_wide_characters_stay_in_their_row(self):
        # A server's error in CJK (two cells a character) was clipped by characters, not cells: its row ran on
        # into the next, and the status line into the key hint.
        error = "\u8d77\u52d5\u3067\u304d\u307e\u305b\u3093" * 20  # "cannot start", in Japanese
        path = self.config({"broken": {"command": PY, "args": ["-c", "import sys; sys.stderr.write(%r); sys.exit(3)" % error]}})
        pane = self.tui(path)
        pane.wait_for("broken")
        pane.keys("t")
        said = "server `broken` failed to start: " + error
        row = self.COLUMNS % ("broken", "command", "yes", "failed", "-", "-", error)
        self.wait_screen(pane, [("mcpstudio  namespace: (all)  0 tools, under Cursor's 40  %s" % path)[:100],
                                self.COLUMNS % ("SERVER", "KIND", "ON", "STATE", "TOOLS", "NAMESPACES", "LAST ERROR"),
                                row[:63 + 18]] + [""] * 25 + [said[:33 + 33], self.HINT])  # 37 and 66 cells of room
        pane.keys("Enter")
        lines = pane.wait_for("last error: " + error[:10])
        self.assertEqual(lines[28:], [said[:66], "c:call p:allow/deny t:test l:log Esc:back ?:help q:quit"])
        self.quit(pane)

    def test_a_log_line_with_tabs_and_colour_codes_stays_in_its_row(self):
        # curses shows a tab as up to 8 cells and ESC as two (^[): the line ran on into the next row.
        line = "\x1b[32minfo\x1b[0m\tstarting\tstep 1\t" + "x" * 70
        pane = self.tui(self.config({"noisy": {"command": PY, "args": ["-c", "import sys; sys.stderr.write(%r); sys.exit(3)"
                                                                        % (line + "\n")]}}))
        pane.wait_for("noisy")
        pane.keys("t")
        pane.wait_for("failed to start")
        pane.keys("l")
        lines = pane.wait_for("log of noisy", "stderr: ")
        rows = [text for text in lines[2:28] if text]
        self.assertTrue(all(re.match(r"\d\d:\d\d:\d\d \w", text) for text in rows), lines)  # none ran on into another
        self.assertEqual(next(text for text in rows if " stderr: " in text)[8:],
                         (" stderr: " + line).expandtabs().replace("\x1b", "^[")[:100 - 8])
        self.quit(pane)

    def test_the_log_follows_to_its_newest_line_and_scrolls_back(self):
        # Following a log longer than the screen, the newest line was left off the bottom.
        program = "import sys; [sys.stderr.write('line %03d\\n' % i) for i in range(100)]; sys.exit(3)"
        pane = self.tui(self.config({"chatty": {"command": PY, "args": ["-c", program]}}))
        pane.wait_for("chatty")
        pane.keys("t")
        pane.wait_for("failed to start")
        pane.keys("l")

        log = (["mcpstudio: starting: ", "mcpstudio: started pid "] + ["stderr: line %03d" % index for index in range(100)]
               + ["mcpstudio: failed to start: line 099", "mcpstudio: warning: server `chatty` failed to start"])

        def shown(top):  # the log from line `top` on, in rows 2-27 (each row's time left out)
            return all(row[9:].startswith(text) for row, text in zip(pane.lines()[2:28], log[top:top + 26] + [""] * 26))
        self.assertTrue(wait_until(lambda: shown(len(log) - 26)), pane.lines())
        for top in range(len(log) - 27, len(log) - 57, -1):  # back, one row at a time
            pane.keys("Up")
            self.assertTrue(wait_until(lambda top=top: shown(top)), (top, pane.lines()))
        pane.keys("f")
        self.assertTrue(wait_until(lambda: shown(len(log) - 26)), pane.lines())
        self.quit(pane)

    def test_a_nul_in_a_servers_error_shows_as_caret_at(self):
        # curses refuses a string with a NUL (ValueError): the TUI died with a traceback.
        pane = self.tui(self.config({"nul": {"command": PY, "args": ["-c", "import sys; sys.stderr.write('bad\\x00byte'); sys.exit(3)"]}}))
        pane.wait_for("nul")
        pane.keys("t")
        self.assertIn("failed    ", pane.wait_for("bad^@byte")[2])
        self.quit(pane)

    def test_closing_the_terminal_stops_the_servers_it_started(self):
        pane = self.tui(self.config({"good": self.upstream("good")}))
        pane.wait_for("good")
        pane.keys("t")
        pane.wait_for("good is running")
        left = descendants(pane.pid)
        pane.tmux("kill-pane", "-t", "tui")  # as a person closing the window: the TUI gets SIGHUP
        self.assertTrue(wait_until(lambda: not any(alive(pid) for pid in left + [pane.pid])),
                        [open("/proc/%d/cmdline" % pid).read() for pid in left if alive(pid)])
        self.assertTrue(self.all_gone())


class ProtocolFuzzer:
    """Structurally valid but wrong JSON-RPC for every method of both protocol eras.

    `next()` returns (bytes to write, {id key: "once" | "at most once"}): the ids a correct
    server must answer exactly once, or may answer at most once (cancelled, unparseable,
    a listen that lasts). An id key is `json.dumps(id)`. Fresh ids never repeat.
    """

    HANDSHAKE = ("initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read",
                 "resources/templates/list", "resources/subscribe", "prompts/list", "prompts/get",
                 "logging/setLevel", "completion/complete", "no/such/method")
    MODERN = ("server/discover", "tools/list", "tools/call", "resources/list", "resources/read",
              "resources/templates/list", "prompts/list", "prompts/get", "subscriptions/listen", "ping")
    NOTIFICATIONS = ("notifications/initialized", "notifications/cancelled", "notifications/progress",
                     "notifications/roots/list_changed")
    WRONG = (None, True, False, 0, -1, 2 ** 70, -2 ** 63, 1.5, -0.0, 1e308, "", "wrong", "\ud800", "\x00",
             "\u202e\U0001f600", [], [None], {}, {"a": {"b": [1, {"c": None}]}}, _DEEP, _BAD_UTF8)
    BAD_IDS = (None, True, False, 1.5, 1e300, [], [1], {}, {"id": 1}, _DEEP)

    def __init__(self, seed, tools=("echo",), uris=("demo://hello",), prompts=("greet",)):
        import random
        self.rng = random.Random(seed)
        self.tools, self.uris, self.prompts = tools, uris, prompts
        self.count = 0
        self.sent = []  # valid ids of requests already written (cancels pick from them)

    def fresh_id(self):
        self.count += 1
        n, kind = self.count, self.rng.randrange(7)
        return [1000 + n, -1000 - n, 10 ** 30 + n, -2 ** 63 - n, "r-%d" % n, "ид-%d-☃" % n,
                "long-%d-" % n + "x" * 3000][kind]

    def params(self, method, modern):
        rng = self.rng
        meta = {"progressToken": rng.choice([1, "tok", None])}
        if modern:
            meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/logLevel": rng.choice(["debug", "error"])}
        tool, uri, prompt = rng.choice(self.tools), rng.choice(self.uris), rng.choice(self.prompts)
        params = {
            "initialize": {"protocolVersion": rng.choice(["2025-11-25", "2024-11-05", "1999"]), "capabilities": {},
                           "clientInfo": {"name": "fuzz", "version": "0"}},
            "tools/call": {"name": tool, "arguments": {"message": "hi", "text": "hi"}},
            "resources/read": {"uri": uri}, "resources/subscribe": {"uri": uri},
            "prompts/get": {"name": prompt, "arguments": {"who": "fuzz"}},
            "logging/setLevel": {"level": rng.choice(["debug", "emergency"])},
            "completion/complete": {"ref": {"type": "ref/prompt", "name": prompt}, "argument": {"name": "who", "value": "f"}},
            "tools/list": {"cursor": rng.choice([None, "0", "zzz"])},
            "subscriptions/listen": {"notifications": {"toolsListChanged": True}},
            "notifications/cancelled": {"requestId": rng.choice([self.sent[-1], rng.choice(self.sent)]) if self.sent else 1,
                                        "reason": "fuzz"},
            "notifications/progress": {"progressToken": 1, "progress": 1, "total": 2},
        }.get(method, {})
        params = {k: v for k, v in params.items() if v is not None}
        params["_meta"] = meta
        return params

    def _paths(self, value, path=()):
        yield path
        if isinstance(value, dict):
            for key, item in value.items():
                yield from self._paths(item, path + (key,))

    def mutate(self, message):
        """Change one thing: a field's type, a missing or extra key, deep nesting."""
        rng = self.rng
        kind = rng.random()
        if kind < 0.25:
            return message
        paths = [p for p in self._paths(message) if p]
        path = rng.choice(paths)
        parent = message
        for key in path[:-1]:
            parent = parent[key]
        if kind < 0.75:
            parent[path[-1]] = rng.choice(self.BAD_IDS if path == ("id",) else self.WRONG)
        elif kind < 0.85 and path != ("id",):
            del parent[path[-1]]
        elif kind < 0.95:
            parent["x-%d" % rng.randrange(1000)] = rng.choice(self.WRONG)
        else:
            parent[path[-1]] = _DEEP
        return message

    def message(self, notification=False, in_batch=False):
        modern = self.rng.random() < 0.4
        if notification:
            method = self.rng.choice(self.NOTIFICATIONS)
            return self.mutate({"jsonrpc": "2.0", "method": method, "params": self.params(method, False)})
        # No subscriptions/listen in a batch: the batch would wait for it for ever (issue 11,
        # relagg's item; FuzzTests.test_batch_with_listen_answers_its_other_members).
        method = self.rng.choice([m for m in self.MODERN if not in_batch or m != "subscriptions/listen"]
                                 if modern else self.HANDSHAKE)
        return self.mutate({"jsonrpc": "2.0", "id": self.fresh_id(), "method": method,
                            "params": self.params(method, modern)})

    def sweep(self):
        """Every wrong value in every field of every method of both eras, once each: [(bytes, expect)]."""
        writes = []
        bases = [(m, False, True) for m in self.HANDSHAKE] + [(m, True, True) for m in self.MODERN]
        bases += [(m, False, False) for m in self.NOTIFICATIONS]
        for method, modern, request in bases:
            base = {"jsonrpc": "2.0", "method": method, "params": self.params(method, modern)}
            for path in [p for p in self._paths(base) if p]:
                for wrong in self.WRONG:
                    message = json.loads(json.dumps(base))
                    if request:
                        message["id"] = self.fresh_id()
                    parent = message
                    for key in path[:-1]:
                        parent = parent[key]
                    parent[path[-1]] = wrong
                    data, parsed = self.encode(message)
                    found = self.expectation(message, parsed)
                    writes.append((data + b"\n", dict([found]) if found else {}))
        return writes

    @staticmethod
    def expectation(message, parsed=True):
        """(id key, "once" | "at most once") for a message a correct server answers by id, else None."""
        if not isinstance(message, dict) or "id" not in message:
            return None
        request_id = message["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, (int, str)) or request_id == _DEEP:
            return None
        key = json.dumps(request_id)
        if not parsed or message.get("method") == "subscriptions/listen" or (
                "method" not in message and ("result" in message or "error" in message)):
            return key, "at most once"
        return key, "once"

    def encode(self, value) -> tuple:
        """The bytes of `value` with placeholders swapped; and whether a server can parse them."""
        rng = self.rng
        text = json.dumps(value)
        parsed = True
        if json.dumps(_DEEP) in text:
            depth = rng.choice([3, 50, 400, 5000, 100000])
            parsed = depth < 500  # json's recursion limit is about 1000
            deep = "[" * depth + "]" * depth if rng.random() < 0.5 else '{"a":' * depth + "1" + "}" * depth
            text = text.replace(json.dumps(_DEEP), deep)
        data = text.encode("utf-8", "surrogatepass")
        if json.dumps(_BAD_UTF8).encode() in data:
            data = data.replace(json.dumps(_BAD_UTF8).encode(), b'"' + rng.choice(
                [b"\xff\xfe", b"\xc3(", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"]) + b'"')
            parsed = False
        return data, parsed

    def next(self):
        """One write: a request, a notification, a batch, garbage or a lying frame."""
        rng = self.rng
        roll = rng.random()
        expect = {}
        if roll < 0.08:  # garbage that is not JSON at all
            return rng.choice([b"not json", b"{", b"}", b"[1,2", b"\x00\x01\x02", b"\xff" * 20, b'{"id": 5',
                               b"Content-Length: abc", b"null", b"123", b'"str"', b"[]", b"[[]]"]) + b"\n", expect
        if roll < 0.2:
            messages = [self.message(notification=rng.random() < 0.3, in_batch=True) for _ in range(rng.randrange(1, 5))]
            if rng.random() < 0.2:
                messages.append(rng.choice(self.WRONG))
            value = messages
        elif roll < 0.35:
            messages = [self.message(notification=True)]
            value = messages[0]
        else:
            messages = [self.message()]
            value = messages[0]
        data, parsed = self.encode(value)
        for message in messages:
            found = self.expectation(message, parsed)
            if found:
                expect[found[0]] = found[1]
                self.sent.append(message["id"])
            params = message.get("params") if isinstance(message, dict) and "id" not in message else None
            if isinstance(params, dict) and message.get("method") == "notifications/cancelled":
                cancelled = params.get("requestId")
                if isinstance(cancelled, (int, str)) and not isinstance(cancelled, bool):
                    expect[json.dumps(cancelled)] = "at most once"  # it may have been cancelled in time
        framing = rng.random()
        if framing < 0.1:
            data = b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
        elif framing < 0.14:  # a Content-Length that claims more than the body: the stream stays in step
            extra = rng.randrange(1, 40)
            data = b"Content-Length: %d\r\nContent-Type: application/json\r\n\r\n%s%s" % (
                len(data) + extra, data, (b'\n{"jsonrpc":"2.0","id":"swallowed","method":"ping"}\n' * 2)[:extra])
            expect = {key: "at most once" for key in expect}
        elif framing < 0.18 and len(data) > 2:  # one that claims less: the rest is a bad line
            cut = rng.randrange(1, len(data))
            data = b"Content-Length: %d\r\n\r\n%s\n" % (cut, data)
            expect = {key: "at most once" for key in expect}
        elif framing < 0.25:
            data = b"\r\n\n" + data + b"\r\n"
        else:
            data += b"\n"
        return data, expect


def jsonrpc_problem(message):
    """What is wrong with a message mcpstudio wrote, or None for a well-formed JSON-RPC message."""
    if isinstance(message, list):
        if not message:
            return "an empty batch"
        return next((problem for problem in map(jsonrpc_problem, message) if problem), None)
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return "not a JSON-RPC 2.0 object"
    if "method" in message:
        ok = isinstance(message["method"], str) and isinstance(message.get("params", {}), (dict, list))
        return None if ok else "a malformed notification"
    if "id" not in message or ("result" in message) == ("error" in message):
        return "a response needs an id and exactly one of result and error"
    error = message.get("error")
    if error is not None and not (isinstance(error, dict) and type(error.get("code")) is int
                                  and isinstance(error.get("message"), str)):
        return "a malformed error object"
    if "result" in message and not isinstance(message["result"], dict):
        return "a result that is not an object"
    return None


class FramedPeer(McpProcess):
    """An McpProcess whose stdout reader takes both framings (newline JSON, Content-Length) and
    records every byte that is not a well-formed JSON-RPC message (`violations`) and how many
    times each id was answered (`answers`, by `json.dumps(id)`)."""

    def __init__(self, *args, **keys):
        self.answers = collections.Counter()
        self.violations = []
        self.stdout_closed = threading.Event()
        super().__init__(*args, **keys)

    def _read_stdout(self):
        buf = bytearray()
        while True:
            chunk = self.proc.stdout.read1(1 << 16)
            if not chunk:
                break
            buf += chunk
            while self._take(buf):
                pass
        if buf:
            self.violations.append(("bytes left unframed at exit", bytes(buf[:300])))
        self.stdout_closed.set()
        with self.lock:
            self.lock.notify_all()

    def _take(self, buf) -> bool:
        header = b"Content-Length: "
        if buf[:len(header)] == header[:len(buf)]:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return False
            try:
                length = int(buf[len(header):end])
            except ValueError:
                self.violations.append(("a malformed Content-Length header", bytes(buf[:end])))
                del buf[:end + 4]
                return True
            if len(buf) < end + 4 + length:
                return False
            body = bytes(buf[end + 4:end + 4 + length])
            del buf[:end + 4 + length]
        else:
            nl = buf.find(b"\n")
            if nl < 0:
                return False
            body = bytes(buf[:nl])
            del buf[:nl + 1]
        try:
            message = json.loads(body.decode("utf-8"))
        except ValueError as exc:
            self.violations.append(("not JSON: %s" % exc, body[:300]))
            return True
        problem = jsonrpc_problem(message)
        if problem:
            self.violations.append((problem, body[:300]))
        with self.lock:
            self.stdout_lines.append(body + b"\n")
            for item in message if isinstance(message, list) else [message]:
                if not isinstance(item, dict):
                    continue
                if "method" in item:
                    self.notifications.append(item)
                elif "id" in item:
                    self.responses[item["id"] if isinstance(item["id"], (str, int)) else None] = item
                    if item["id"] is not None:
                        self.answers[json.dumps(item["id"])] += 1
            self.lock.notify_all()
        return True


class FuzzTests(ScratchDir):
    """Seeded protocol fuzzing over stdio and HTTP: never dies, only protocol on stdout, each
    request answered exactly once (by id), ping answered correctly at the end."""

    ROUNDS = int(os.environ.get("MCPSTUDIO_FUZZ_ROUNDS") or 350)  # more for a long fuzz

    def full_config(self):
        """A config with every method: a local tool, resources, and an upstream with prompts."""
        fake = self.script("fake_mcp.py", FAKE_SERVER, executable=False)
        config = os.path.join(self.dir, "full.json")
        with open(config, "w") as f:
            nap = self.script("nap.py", "import sys, time\ntime.sleep(0.2)\nprint(sys.argv[1])\n")
            json.dump({"tools": [{"name": "say", "command": "echo {message}"},
                                 {"name": "nap", "command": "%s %s {message}" % (PY, nap)}],
                       "resources": [{"uri": "demo://hello", "name": "hello", "command": "echo hello"},
                                     {"uri": "demo://echo/{word}", "name": "word", "command": "echo {word}"}],
                       "mcpServers": {"up": {"command": PY, "args": [fake, "--name", "up", "--only", "echo"]}}}, f)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        env.pop("FAKE_ONLY", None)
        return config, env

    def fuzz(self, peer, fuzzer, seed, rounds=None):
        """Write `rounds` fuzz messages, then check every answer and the final ping."""
        expected = {}
        for _ in range(rounds or self.ROUNDS):
            data, expect = fuzzer.next()
            for key, how in expect.items():
                expected[key] = "at most once" if "at most once" in (how, expected.get(key)) else how
            try:
                if len(data) > 64 and fuzzer.rng.random() < 0.2:  # split a message across writes
                    cut = fuzzer.rng.randrange(1, len(data))
                    peer.send_raw(data[:cut])
                    peer.send_raw(data[cut:])
                else:
                    peer.send_raw(data)
            except OSError:
                self.fail("seed %d: mcpstudio stopped reading (exit %s)%s" % (seed, peer.proc.poll(), peer.context()))
        once = [key for key, how in expected.items() if how == "once"]
        with peer.lock:
            peer.lock.wait_for(lambda: all(peer.answers[key] for key in once), 30)
        self.assertEqual(peer.request("ping", request_id="final-ping", timeout=30),
                         {"jsonrpc": "2.0", "id": "final-ping", "result": {}}, "seed %d" % seed)
        self.assertIsNone(peer.proc.poll(), "seed %d: mcpstudio died%s" % (seed, peer.context()))
        unanswered = [key[:80] for key in once if peer.answers[key] != 1]
        self.assertEqual(unanswered, [], "seed %d: requests not answered exactly once%s" % (seed, peer.context()))
        extra = [(key[:80], n) for key, n in peer.answers.items()
                 if key != '"final-ping"' and (key not in expected or n > 1)]
        self.assertEqual(extra, [], "seed %d: answers to ids never asked, or twice%s" % (seed, peer.context()))
        self.assertEqual(peer.close(30), 0, "seed %d%s" % (seed, peer.context()))
        peer.stdout_closed.wait(WAIT)
        self.assertEqual(peer.violations, [], "seed %d: bytes on stdout that are not protocol" % seed)
        return expected

    def test_stdio_template_mode(self):
        # Template mode survives wrong JSON-RPC of both eras in both framings and stays exact.
        for seed in (FUZZ_SEED, FUZZ_SEED + 1):
            with self.subTest(seed=seed):
                with FramedPeer("echo", "{message}") as peer:
                    expected = self.fuzz(peer, ProtocolFuzzer(seed), seed)
                    self.assertGreater(sum(how == "once" for how in expected.values()), 100)  # the fuzz reached the server

    def test_stdio_every_field_swept(self):
        # Not left to chance: each wrong value in each field of each method and notification of
        # both eras, once, against the full config.
        config, env = self.full_config()
        seed = FUZZ_SEED + 4
        fuzzer = ProtocolFuzzer(seed, tools=("say",), uris=("demo://hello",), prompts=("up__greet",))
        writes = fuzzer.sweep()
        self.assertGreater(len(writes), 1500)
        with FramedPeer("serve", "--config", config, env=env) as peer:
            expected = {}
            for data, expect in writes:
                expected.update(expect)
                peer.send_raw(data)
            once = [key for key, how in expected.items() if how == "once"]
            with peer.lock:
                peer.lock.wait_for(lambda: all(peer.answers[key] for key in once), 60)
            self.assertEqual([key[:60] for key in once if peer.answers[key] != 1], [], "seed %d%s" % (seed, peer.context()))
            self.assertEqual([k for k, n in peer.answers.items() if k not in expected or n > 1], [])
            self.assertEqual(peer.request("ping", request_id="final-ping")["result"], {})
            self.assertEqual(peer.close(30), 0)
            peer.stdout_closed.wait(WAIT)
            self.assertEqual(peer.violations, [], "seed %d" % seed)

    def test_stdio_every_method(self):
        # Tools, resources, prompts, subscriptions and an upstream: every method of both eras is fuzzed.
        config, env = self.full_config()
        seed = FUZZ_SEED + 2
        fuzzer = ProtocolFuzzer(seed, tools=("say", "up__echo", "mcpstudio__servers_list", "nope"),
                                uris=("demo://hello", "demo://echo/w", "fake://up/info", "demo://none"),
                                prompts=("up__greet", "nope"))
        with FramedPeer("serve", "--config", config, env=env) as peer:
            self.fuzz(peer, fuzzer, seed)


    def http_exchange(self, port, data, headers, timeout=WAIT, method="POST"):
        """(status, content type, body bytes) of one request; (None, None, exception) if none came."""
        import http.client
        import socket
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            connection.request(method, "/mcp", body=data, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheader("Content-Type", ""), response.read()
        except (socket.timeout, OSError, http.client.HTTPException) as exc:
            return None, None, exc
        finally:
            connection.close()

    def check_http_answer(self, seed, sent, status, kind, body, key, cancelled=False):
        """One HTTP exchange answered once (a cancelled one: at most once): a complete response,
        protocol in the body, the right id."""
        where = "seed %d: %r answered %s %r" % (seed, sent[:300], status, body[:300] if isinstance(body, bytes) else body)
        self.assertIsNotNone(status, where)
        self.assertLess(status, 500, where)
        if status == 202:
            self.assertEqual(body, b"", where)
            self.assertIsNone(key, where)  # a request is never just "accepted"
            return
        if kind.startswith("text/event-stream"):
            messages = [json.loads(line[5:]) for line in body.decode().splitlines()
                        if line.startswith("data:") and line[5:].strip()]  # a priming event's data is empty
        else:
            messages = [json.loads(body.decode("utf-8"))]
        for message in messages:
            self.assertIsNone(jsonrpc_problem(message), where)
        finals = [m for m in messages if "method" not in m]
        if cancelled and not finals:
            return  # its stream just ended
        self.assertEqual(len(finals), 1, where)
        if key is not None:
            self.assertIn(json.dumps(finals[0]["id"]), (key, "null") if status >= 400 else (key,), where)

    def http_fuzz(self, server, seed, rounds, failures):
        """One client's share of the HTTP fuzz, on its own session; what went wrong goes to `failures`."""
        fuzzer = ProtocolFuzzer(seed, tools=("say", "nap", "up__echo", "nope"), uris=("demo://hello", "fake://up/info"),
                                prompts=("up__greet",))
        rng = fuzzer.rng
        try:
            session = server.initialize_session()
            for _ in range(rounds):
                roll = rng.random()
                if roll < 0.1:
                    value = [fuzzer.message(rng.random() < 0.3, in_batch=True) for _ in range(rng.randrange(1, 4))]
                else:
                    value = fuzzer.message(notification=roll < 0.25)
                data, parsed = fuzzer.encode(value)
                message = value if isinstance(value, dict) else {}
                params = message.get("params") if isinstance(message.get("params"), dict) else {}
                meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
                headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
                if "io.modelcontextprotocol/protocolVersion" in meta or message.get("method") == "server/discover":
                    headers["MCP-Protocol-Version"] = str(meta.get("io.modelcontextprotocol/protocolVersion"))
                    headers["Mcp-Method"] = str(message.get("method"))
                    headers["Mcp-Name"] = str(params.get("uri" if message.get("method") == "resources/read" else "name"))
                else:
                    headers["Mcp-Session-Id"] = session
                headers = {name: value.encode("utf-8", "surrogatepass").decode("latin-1").replace("\r", "").replace("\n", "")
                           for name, value in headers.items()}
                if rng.random() < 0.1:  # a wrong or missing header
                    name = rng.choice(sorted(headers))
                    if rng.random() < 0.5:
                        del headers[name]
                    else:
                        headers[name] = rng.choice(["", "x", "text/plain", "2099-01-01", "é"])
                found = ProtocolFuzzer.expectation(message, parsed) if isinstance(value, dict) else None
                listen = message.get("method") == "subscriptions/listen"
                if found and "Mcp-Session-Id" in headers and message.get("method") == "tools/call" and rng.random() < 0.3:
                    # Cancelled from another connection while it runs: answered at most once.
                    answer = []
                    call = threading.Thread(target=lambda answer=answer, data=data, headers=headers: answer.extend(self.http_exchange(server.port, data, headers)))
                    call.start()
                    time.sleep(rng.choice([0, 0.01, 0.1]))
                    server.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                 "params": {"requestId": message["id"], "reason": "fuzz"}}, session=session)
                    call.join(WAIT)
                    if answer and answer[0] is not None:
                        self.check_http_answer(seed, data, *answer, found[0], cancelled=True)
                    continue
                status, kind, body = self.http_exchange(server.port, data, headers, timeout=2 if listen else WAIT)
                if listen and status is None:
                    continue  # a listening stream stays open until the client goes: we went
                self.check_http_answer(seed, data, status, kind, body, found and found[0])
            status, _, text = server.post({"jsonrpc": "2.0", "id": "final-ping", "method": "ping"}, session=session)
            self.assertEqual((status, json.loads(text)), (200, {"jsonrpc": "2.0", "id": "final-ping", "result": {}}))
        except Exception as exc:  # AssertionError included: reported by the test's thread
            failures.append("seed %d: %r" % (seed, exc))

    def test_http(self):
        # The same fuzz over Streamable HTTP, three clients at once, with cancels from a second
        # connection: each POST gets one complete answer with its own id (a cancelled one at most
        # one), nothing reaches stdout, and ping works at the end.
        config, env = self.full_config()
        with HttpServerProcess("serve", "--config", config, env=env) as server:
            failures = []
            clients = [threading.Thread(target=self.http_fuzz, args=(server, FUZZ_SEED + 3 + 100 * n, 120, failures))
                       for n in range(3)]
            for client in clients:
                client.start()
            for client in clients:
                client.join(120)
            self.assertEqual(failures, [], server.context())
            self.assertIsNone(server.proc.poll(), "mcpstudio died%s" % server.context())
            self.assertEqual(server.stdout_lines, [], "HTTP mode wrote to stdout")

    def test_http_lying_framing(self):
        # Raw HTTP with lying lengths, bad chunks, invalid UTF-8 and deep nesting: each gets a 4xx
        # or a closed connection, never a hang or a crash, and the next client is served.
        import socket
        ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
        cases = [  # (name, bytes, half-close after sending, statuses that may answer; None = closed)
            ("body shorter than declared", head + b"Content-Length: %d\r\n\r\n%s" % (len(ping) + 10, ping), True,
             (None, 400)),
            ("body longer than declared", head + b"Content-Length: %d\r\n\r\n%s" % (len(ping) - 5, ping), True, (400,)),
            ("negative length", head + b"Content-Length: -1\r\n\r\n" + ping, True, (400, 413)),
            ("length not a number", head + b"Content-Length: 1e3\r\n\r\n" + ping, True, (400,)),
            ("huge length", head + b"Content-Length: 18446744073709551617\r\n\r\n" + ping, True, (413,)),
            ("two lengths", head + b"Content-Length: 40\r\nContent-Length: 41\r\n\r\n" + ping, True, (400,)),
            ("bad chunk size", head + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n" + ping + b"\r\n0\r\n\r\n", True, (400,)),
            ("chunk longer than sent", head + b"Transfer-Encoding: chunked\r\n\r\nffff\r\n" + ping, True, (None, 400)),
            ("invalid UTF-8", head + b"Content-Length: 6\r\n\r\n\"\xff\xfe\xc3(\"", True, (400,)),
            ("deep nesting", head + b"Content-Length: 200000\r\n\r\n" + b"[" * 100000 + b"]" * 100000, True, (400,)),
            ("no request line", b"\r\n\r\n", True, (None, 400)),
            ("header without colon", head + b"Broken header\r\n\r\n", True, (400,)),
        ]
        with HttpServerProcess("echo", "{message}") as server:
            for name, data, half_close, statuses in cases:
                with self.subTest(case=name):
                    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
                        sock.sendall(data)
                        if half_close:
                            sock.shutdown(socket.SHUT_WR)
                        reply = b""
                        while True:
                            chunk = sock.recv(65536)
                            if not chunk:
                                break
                            reply += chunk
                    status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else None
                    self.assertIn(status, statuses, reply[:500])
                    if status is not None:
                        body = reply.split(b"\r\n\r\n", 1)[1].split(b"HTTP/1.1 ")[0]
                        self.assertIsNone(jsonrpc_problem(json.loads(body)), body)
                    self.assertIsNone(server.proc.poll(), server.context())
            status, _, text = server.post({"jsonrpc": "2.0", "id": 2, "method": "ping"},
                                          headers={"MCP-Protocol-Version": "2025-11-25"}, session=server.initialize_session())
            self.assertEqual(json.loads(text), {"jsonrpc": "2.0", "id": 2, "result": {}})
            self.assertEqual(server.stdout_lines, [])


    def test_http_early_refusal_survives_the_body(self):
        # Found by the fuzz, under load: a request refused from its headers (a NUL in a header
        # value, an oversized header, a foreign Origin) whose body the client is still sending.
        # The server answers, then reads and drops the rest before it closes, so the client's
        # writes succeed and it reads a JSON-RPC error; closing at once made the kernel reset
        # the connection (BrokenPipeError in the client) and the answer was lost.
        import socket
        body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}' + b" " * 100000
        head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
        cases = [("NUL in a header", b"Mcp-Name: \x00deep\x00\r\n", 400),
                 ("oversized header", b"Mcp-Name: " + b"n" * 40000 + b"\r\n", 431),
                 ("foreign Origin", b"Origin: http://evil.example\r\n", 403)]
        with HttpServerProcess("echo", "{message}") as server:
            for name, header, status in cases:
                with self.subTest(case=name):
                    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
                        sock.sendall(head + header + b"Content-Length: %d\r\n\r\n" % len(body))
                        time.sleep(0.3)  # the server has answered and stopped writing by now
                        try:
                            for piece in (body[:1000], body[1000:]):  # http.client writes a body apart, too
                                sock.sendall(piece)
                                time.sleep(0.1)
                        except OSError as exc:
                            self.fail("the server reset the connection while the body was sent: %r" % exc)
                        reply = b""
                        while True:
                            chunk = sock.recv(65536)
                            if not chunk:
                                break
                            reply += chunk
                    self.assertTrue(reply.startswith(b"HTTP/1.1 %d " % status), reply[:300])
                    self.assertIn(b"Connection: close", reply)
                    answer = json.loads(reply.split(b"\r\n\r\n", 1)[1])
                    self.assertIsNone(jsonrpc_problem(answer), answer)
                    self.assertIn("error", answer)
            self.assertIsNone(server.proc.poll(), server.context())

    def test_http_lone_surrogates_and_missing_method(self):
        # Found by the fuzz: a lone surrogate in a reply closed the HTTP connection without an
        # answer, and a message with an id but no method was "accepted" (202) unanswered.
        with HttpServerProcess("echo", "{message}") as server:
            status, _, text = server.modern("tools/call", {"name": "echo", "arguments": {"message": "a\ud800b"}},
                                            headers={"Mcp-Name": "echo"})
            self.assertEqual(status, 200)
            self.assertIn("isError", server.messages(text)[-1]["result"])
            status, _, text = server.post({"jsonrpc": "2.0", "id": 7, "method": "\ud800", "params": {"_meta": MODERN_META}},
                                          headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "x"})
            self.assertEqual((status, json.loads(text)["id"], json.loads(text)["error"]["code"]), (400, 7, -32020))
            session = server.initialize_session()
            status, _, text = server.post({"jsonrpc": "2.0", "id": 8}, session=session)
            self.assertEqual((status, json.loads(text)["id"], json.loads(text)["error"]["code"]), (200, 8, -32600))
            status, _, text = server.post({"jsonrpc": "2.0", "id": 9, "params": {"_meta": MODERN_META}},
                                          headers={"MCP-Protocol-Version": "2026-07-28"})
            self.assertEqual((status, json.loads(text)["id"], json.loads(text)["error"]["code"]), (400, 9, -32600))
            status, _, text = server.post({"jsonrpc": "2.0", "id": 10, "result": {}}, session=session)
            self.assertEqual((status, text), (202, ""))  # a response is still just accepted

    def test_negative_content_length(self):
        # `Content-Length: -5` is a malformed header: it is reported and the lines after it are served.
        with FramedPeer("echo", "{message}") as peer:
            peer.send_raw(b"Content-Length: -5\r\n\r\n" + b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
                          + b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')
            self.assertEqual(peer.close(), 0)
            peer.stdout_closed.wait(WAIT)
            self.assertEqual((peer.answers["1"], peer.answers["2"]), (1, 1), peer.context())

    def test_batch_with_listen_answers_its_other_members(self):
        # The other members of a batch are answered although the listen in it lasts.
        config, env = self.full_config()
        listen = {"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen",
                  "params": {"notifications": {"toolsListChanged": True}, "_meta": MODERN_META}}
        with FramedPeer("serve", "--config", config, env=env) as peer:
            peer.send([listen, {"jsonrpc": "2.0", "id": "p", "method": "ping"}])
            with peer.lock:
                peer.lock.wait_for(lambda: peer.answers['"p"'], 5)
            self.assertEqual(peer.answers['"p"'], 1, peer.context())


# Lines an upstream may write before its answer, each the same for every call (`--junk N`).
UPSTREAM_JUNK = [
    b"Welcome! this is not JSON\n",
    b"\xff\xfe\xc3( not UTF-8\n",
    b'{"jsonrpc": "2.0", "id": "\xff", "result": {}}\n',
    b"[]\n[1, 2]\nnull\n42\n\"text\"\n",
    b'{"jsonrpc": "2.0", "id": 1.5, "result": {}}\n{"jsonrpc": "2.0", "id": true, "result": {}}\n',
    b'{"jsonrpc": "2.0", "id": 100000000000000000000000000000, "result": "not an object"}\n',
    b'{"jsonrpc": "2.0", "id": null, "error": "not an object"}\n{"jsonrpc": "2.0", "error": {"code": "x"}}\n',
    b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": [1], "progress": "x"}}\n',
    b'{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": 5, "data": {"deep": [[[]]]}}}\n',
    b'{"jsonrpc": "2.0", "method": "notifications/message", "params": "not an object"}\n',
    b'{"jsonrpc": "2.0", "id": "srv", "method": "sampling/createMessage", "params": {}}\n',
    b'{"jsonrpc": "2.0", "id": [1], "result": {}}\n',
    b'{"jsonrpc": "2.0", "id": {"a": 1}, "error": {"code": 1, "message": "m"}}\n',
    b'{"jsonrpc": "2.0", "method": 5}\n',
    b'{"jsonrpc": "2.0", "method": ["notifications/tools/list_changed"]}\n',
    b"[" * 5000 + b"]" * 5000 + b"\n",
    b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"\n",
]


def faulty_upstream(args):
    """An MCP server over stdio whose tool `work` misbehaves as `args` say (the fault tests' upstream).

    --flood N: N notifications (progress for tokens nobody gave, logs, unknown methods,
    requests to the client) before each answer; --wrong-ids: answers with wrong ids, a null
    id and no id before the right one; --only-wrong-ids: never the right one; --hang-calls:
    lists its tools, then never answers a call. Run as a two-line file (FAULTY_SERVER)."""
    import json
    import sys

    def send(message):
        sys.stdout.write(json.dumps(message) + "\n")

    flood = int(args[args.index("--flood") + 1]) if "--flood" in args else 0
    junk = UPSTREAM_JUNK[int(args[args.index("--junk") + 1])] if "--junk" in args else None
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                      "serverInfo": {"name": "faulty", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "work", "description": "Misbehaves", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            if "--hang-calls" in args:
                continue
            for i in range(flood):
                send([{"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": "nobody-%d" % i, "progress": i}},
                      {"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "debug", "data": "flood %d" % i}},
                      {"jsonrpc": "2.0", "method": "notifications/made/up", "params": {"i": i}},
                      {"jsonrpc": "2.0", "id": "srv-%d" % i, "method": "roots/list"}][i % 4])
            if junk is not None:  # the junk and the answer in one write: one chunk for the reader
                sys.stdout.write(junk.decode("latin-1") + json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {
                    "content": [{"type": "text", "text": "worked"}]}}) + "\n")
                sys.stdout.flush()
                continue
            if "--wrong-ids" in args or "--only-wrong-ids" in args:
                for wrong in (request_id + 100000 if isinstance(request_id, int) else request_id + "x", None, "nobody"):
                    send({"jsonrpc": "2.0", "id": wrong, "result": {"content": [{"type": "text", "text": "WRONG"}]}})
                send({"jsonrpc": "2.0", "result": {"content": [{"type": "text", "text": "WRONG (no id)"}]}})
                if "--only-wrong-ids" in args:
                    sys.stdout.flush()
                    continue
            result = {"content": [{"type": "text", "text": "worked"}]}
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no %s" % method}})
            sys.stdout.flush()
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})
        sys.stdout.flush()


FAULTY_SERVER = ("import sys; sys.path.insert(0, %r); sys.mcpstudio_test_child = True; "
                 "import test_mcpstudio; test_mcpstudio.faulty_upstream(sys.argv[1:])\n" % HERE)


def tagged_processes(tag) -> list:
    """[(pid, command line)] of every live process whose environment holds MCPSTUDIO_TEST_TAG=tag.

    The process table walked through /proc: children and grandchildren inherit the tag,
    and a process reparented after its parent died is found all the same."""
    needle = ("MCPSTUDIO_TEST_TAG=%s" % tag).encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open("/proc/%s/cmdline" % name, "rb") as f:
                command = f.read().replace(b"\0", b" ").decode("utf-8", "replace")[:200]
        except OSError:
            continue
        if alive(int(name)):
            found.append((int(name), command))
    return found


@unittest.skipUnless(sys.platform.startswith("linux"), "walks the process table in /proc")
class FaultTests(ScratchDir):
    """mcpstudio killed or stopped in every mode, clients that vanish, upstreams that misbehave:
    afterwards the process table holds nothing mcpstudio started."""

    def setUp(self):
        super().setUp()
        self.tag = "%d-%s" % (os.getpid(), os.path.basename(self.dir))
        self.env = dict(os.environ, MCPSTUDIO_TEST_TAG=self.tag, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        self.env.pop("FAKE_ONLY", None)
        self.addCleanup(self.kill_tagged)

    def kill_tagged(self):
        """Whatever a failed test left behind is not left for the next one."""
        for pid, _ in tagged_processes(self.tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def assert_nothing_left(self, timeout=mcpstudio.KILL_GRACE + 3, what=""):
        seen = tagged_processes(self.tag)
        left = None if wait_until(lambda: not tagged_processes(self.tag), timeout) else tagged_processes(self.tag)
        self.assertIsNone(left, "%s: still running %.0f s later: %s\n(running before: %s)" % (what, timeout, left, seen))

    def start_mode(self, mode, pids):
        """mcpstudio in `mode` and a tool whose call starts a child and a grandchild (their pids in `pids`)."""
        sleeper = self.pid_sleeper()
        if mode == "template":
            return McpProcess("--name", "s", PY, sleeper, "{out}", env=self.env), "s", {"out": pids}
        if mode == "config":
            path = os.path.join(self.dir, "tools.json")
            with open(path, "w") as f:
                json.dump({"tools": [{"name": "s", "command": "%s %s {out}" % (PY, sleeper)}]}, f)
            return McpProcess("serve", "--config", path, env=self.env), "s", {"out": pids}
        if mode == "script":
            folder = os.path.join(self.dir, "scripts")
            os.makedirs(folder, exist_ok=True)
            script = os.path.join(folder, "s")
            with open(script, "w") as f:
                f.write("#!%s\nimport json, os, runpy, sys\n" % PY)
                f.write("if sys.argv[1:] == ['--help']:\n    print('{}')\n")
                f.write("    sys.stderr.write(json.dumps({'out': {'required': True, 'value_type': 'string'}}))\n")
                f.write("    sys.exit(0)\nsys.argv = [%r, os.environ['MCPD_OPT_out']]\nrunpy.run_path(%r)\n"
                        % (sleeper, sleeper))
            os.chmod(script, 0o755)
            return McpProcess("--root-directory", folder, env=self.env), "s", {"out": pids}
        fake = self.script("fake_mcp.py", FAKE_SERVER, executable=False)
        path = os.path.join(self.dir, "agg.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {"up": {"command": PY, "args": [fake, "--name", "up", "--pidfile", pids]}}}, f)
        return McpProcess("serve", "--config", path, env=self.env), "up__sleep", {"seconds": 60}

    def start_call(self, mode):
        """A running mcpstudio in `mode` with a call in progress: (server, [child, grandchild])."""
        pids = os.path.join(self.dir, "pids-%s-%d" % (mode, len(os.listdir(self.dir))))
        server, tool, arguments = self.start_mode(mode, pids)
        server.initialize()
        if mode == "aggregator":
            self.assertIn("up__sleep", [t["name"] for t in server.request("tools/list")["result"]["tools"]])
        server.send({"jsonrpc": "2.0", "id": "long", "method": "tools/call",
                     "params": {"name": tool, "arguments": arguments}})
        self.assertTrue(wait_until(lambda: os.path.exists(pids) and os.path.getsize(pids)), server.context())
        with open(pids) as f:
            procs = [int(word) for word in f.read().split()[:2]]
        self.assertTrue(wait_until(lambda: set(procs) <= {pid for pid, _ in tagged_processes(self.tag)}))
        time.sleep(0.3)  # the call is well under way
        return server, procs

    def signal_every_mode(self, signum, modes):
        for mode in modes:
            with self.subTest(mode=mode, signal=signum):
                server, procs = self.start_call(mode)
                with server:
                    server.proc.send_signal(signum)
                    server.proc.wait(WAIT)
                    try:
                        self.assert_nothing_left(what="%s mode, %s" % (mode, signal.Signals(signum).name))
                    finally:
                        self.kill_tagged()  # each mode is judged on its own

    def test_sigterm_in_every_mode(self):
        # SIGTERM while a call runs: mcpstudio, the command, its child and the watchdog are all gone.
        self.signal_every_mode(signal.SIGTERM, ("template", "config", "script", "aggregator"))

    def test_sigkill_in_aggregator_mode(self):
        # SIGKILL (nothing runs in mcpstudio after it): the watchdog stops the upstreams and their children.
        self.signal_every_mode(signal.SIGKILL, ("aggregator",))

    def test_sigkill_in_other_modes(self):
        # SIGKILL in template, config and script mode: the running command and its child are stopped too.
        self.signal_every_mode(signal.SIGKILL, ("template", "config", "script"))

    def test_client_vanishing_mid_call(self):
        # The client dies (both pipes close) while calls run: mcpstudio stops them and exits 0.
        for mode in ("template", "aggregator"):
            with self.subTest(mode=mode):
                server, procs = self.start_call(mode)
                with server:
                    server.proc.stdin.close()
                    server.proc.stdout.close()
                    self.assertEqual(server.proc.wait(WAIT), 0)
                    self.assert_nothing_left(what="%s mode, client gone" % mode)

    def test_http_client_vanishing_mid_call(self):
        # Over HTTP, a 2026-07-28 call whose connection drops is cancelled: its processes stop,
        # the server goes on serving.
        import socket
        sleeper, pids = self.pid_sleeper(), os.path.join(self.dir, "pids")
        with HttpServerProcess("--name", "s", PY, sleeper, "{out}", env=self.env) as server:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "s", "arguments": {"out": pids}, "_meta": MODERN_META}}).encode()
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT)
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                         b"Mcp-Method: tools/call\r\nMcp-Name: s\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            procs = self.read_pids(pids)
            sock.close()
            self.assertTrue(wait_until(lambda: not any(alive(p) for p in procs), mcpstudio.KILL_GRACE + 5),
                            "the vanished client's command still runs")
            status, _, text = server.post({"jsonrpc": "2.0", "id": 2, "method": "ping"},
                                          session=server.initialize_session())
            self.assertEqual((status, json.loads(text)["result"]), (200, {}))
            server.proc.send_signal(signal.SIGTERM)
            server.proc.wait(WAIT)
        self.assert_nothing_left(what="after the HTTP server stopped")


    def serve_upstreams(self, servers):
        path = os.path.join(self.dir, "upstreams.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": servers}, f)
        return FramedPeer("serve", "--config", path, env=self.env)

    def faulty(self, *args, **keys):
        script = os.path.join(self.dir, "faulty_mcp.py")
        if not os.path.exists(script):
            self.script("faulty_mcp.py", FAULTY_SERVER, executable=False)
        return dict({"command": PY, "args": [script] + list(args)}, **keys)

    # UPSTREAM_JUNK lines that make the reader lose the answer in the same chunk (issue 11 names
    # the deep ones; the unhashable ids and token and the non-string methods are new): an
    # exception in Upstream.received/received_message. Upstream is relagg's: expected failure.
    JUNK_LOSING_THE_ANSWER = (7, 11, 12, 13, 14, 15, 16)

    def junk_calls(self, indexes):
        """Call `work` on one upstream per UPSTREAM_JUNK index, at once: {index: text of the answer}."""
        servers = {"j%d" % i: self.faulty("--junk", str(i), toolTimeout=3) for i in indexes}
        with self.serve_upstreams(servers) as server:
            server.initialize()
            names = [t["name"] for t in server.request("tools/list", timeout=30)["result"]["tools"]]
            self.assertEqual(sorted(n for n in names if not n.startswith("mcpstudio__")),
                             sorted("j%d__work" % i for i in indexes))
            for i in indexes:
                server.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "j%d__work" % i}})
            texts = {i: text_of(server.wait_response(i)["result"]) for i in indexes}
            self.assertEqual(server.request("ping")["result"], {})
            self.assertEqual(server.close(), 0)
            server.stdout_closed.wait(WAIT)
            self.assertEqual(server.violations, [])
        return texts

    def test_upstream_junk_before_an_answer(self):
        # Lines that are not JSON, not UTF-8, not objects, responses with ids of every wrong type,
        # malformed results and errors, odd notifications, requests to us: skipped, the answer arrives.
        indexes = [i for i in range(len(UPSTREAM_JUNK)) if i not in self.JUNK_LOSING_THE_ANSWER]
        self.assertEqual(self.junk_calls(indexes), {i: "worked" for i in indexes})

    def test_upstream_junk_that_loses_the_answer(self):
        # A progress token or id that is a list or object, a method that is not a string, nesting
        # deeper than json's recursion limit: skipped too, the answer in the same chunk arrives.
        indexes = self.JUNK_LOSING_THE_ANSWER
        self.assertEqual(self.junk_calls(indexes), {i: "worked" for i in indexes})

    def test_upstream_killed_hung_flooding_and_wrong_ids(self):
        # Upstreams that die mid-call, hang, flood notifications or answer with wrong ids: each
        # call gets one clear answer in time, the client sees only protocol, nothing is left.
        fake = self.script("fake_mcp.py", FAKE_SERVER, executable=False)
        pids = os.path.join(self.dir, "pids")
        servers = {"killed": {"command": PY, "args": [fake, "--name", "killed", "--pidfile", pids]},
                   "hung": self.faulty("--hang-calls", toolTimeout=1),
                   "flood": self.faulty("--flood", "20000"),
                   "wrong": self.faulty("--wrong-ids"),
                   "onlywrong": self.faulty("--only-wrong-ids", toolTimeout=1)}
        with self.serve_upstreams(servers) as server:
            server.initialize()
            server.request("logging/setLevel", {"level": "debug"})
            names = [t["name"] for t in server.request("tools/list", timeout=30)["result"]["tools"]]
            for name in ("killed__sleep", "hung__work", "flood__work", "wrong__work", "onlywrong__work"):
                self.assertIn(name, names)
            # Killed mid-call: the call fails at once, naming the server; the next call restarts it.
            server.send({"jsonrpc": "2.0", "id": "k", "method": "tools/call",
                         "params": {"name": "killed__sleep", "arguments": {"seconds": 60}}})
            time.sleep(0.5)
            with open(pids) as f:
                upstream, grandchild = [int(p) for p in f.read().split()[:2]]
            os.kill(upstream, signal.SIGKILL)
            result = server.wait_response("k", timeout=5)["result"]
            self.assertTrue(result["isError"])
            self.assertIn("server `killed`", text_of(result))
            self.assertTrue(wait_until(lambda: not alive(grandchild), mcpstudio.KILL_GRACE + 3), "its child was left")
            self.assertEqual(text_of(server.call("killed__echo", {"text": "again"})), "killed: again")
            # Hung, and answering only wrong ids: a timeout error within the server's toolTimeout.
            for name in ("hung__work", "onlywrong__work"):
                started = time.monotonic()
                result = server.call(name, {}, timeout=10)
                self.assertTrue(result["isError"], result)
                self.assertIn("within 1 s", text_of(result))
                self.assertLess(time.monotonic() - started, 5)
            # Wrong ids before the right one, and a flood of 20,000 notifications: the right answer.
            self.assertEqual(text_of(server.call("wrong__work", {})), "worked")
            started = time.monotonic()
            self.assertEqual(text_of(server.call("flood__work", {}, timeout=30)), "worked")
            flood_seconds = time.monotonic() - started
            self.assertEqual(server.request("ping")["result"], {})
            # Nothing of the flood reaches the client as a progress for a token it never gave.
            self.assertFalse([n for n in server.notifications_of("notifications/progress")
                              if str(n["params"].get("progressToken", "")).startswith("nobody")])
            self.assertEqual(server.close(), 0)
            server.stdout_closed.wait(WAIT)
            self.assertEqual(server.violations, [])
            self.assertEqual(sorted(json.loads(k) for k, n in server.answers.items() if n != 1), [])
        self.assert_nothing_left(what="after the aggregator exited")
        self.assertLess(flood_seconds, 20)


def _reliability_module():
    """benchmarks/reliability.py, the load driver the long mode runs."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("reliability", os.path.join(HERE, "benchmarks", "reliability.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class LoadTests(ScratchDir):
    """The load of issue 11 in a short mode (the long one: `python3 benchmarks/reliability.py`):
    sequential and concurrent calls through template mode and the aggregator, each answered
    exactly once with its own id and its own text; memory stays put."""

    SEQUENTIAL, CONCURRENT = 500, 200

    def test_template_mode_and_aggregator(self):
        # run_load raises LoadError on a call answered twice, never, with another id or text.
        reliability = _reliability_module()
        for label, argv, tool, env in reliability.modes(self.dir, PY):
            with self.subTest(mode=label):
                figures = reliability.run_load(argv, tool, self.SEQUENTIAL, self.CONCURRENT, env)
                self.assertEqual((figures["sequential"], figures["concurrent"]), (self.SEQUENTIAL, self.CONCURRENT))
                self.assertGreater(figures["sequential_calls_per_s"], 0)
                self.assertLessEqual(figures["concurrent_p50_ms"], figures["concurrent_p99_ms"])
                if sys.platform.startswith("linux"):  # a leak of a reply or a task per call shows here
                    self.assertLess(figures["rss_end_mib"] - figures["rss_start_mib"], 64, figures)

    def test_the_checker_catches_wrong_answers(self):
        # The checker itself, table-driven: each wrong reply fails the run with a message saying why.
        reliability = _reliability_module()
        good = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "m-1\n"}]}}
        other = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "m-2\n"}]}}
        failed = dict(good, result=dict(good["result"], isError=True))
        cases = [({1: good}, [], [], None), ({1: good}, [1], [], "more than once"),
                 ({1: other}, [], [], "m-2"), ({1: failed}, [], [], "isError"),
                 ({1: good}, [], [b"Welcome\n"], "not JSON-RPC")]
        for replies, twice, garbage, fragment in cases:
            with self.subTest(fragment=fragment):
                client = reliability.Client.__new__(reliability.Client)
                client.replies = {key: (reply, 0.0) for key, reply in replies.items()}
                client.twice, client.garbage = twice, garbage
                if fragment is None:
                    reliability.check(client, [1])
                    continue
                with self.assertRaises(reliability.LoadError) as caught:
                    reliability.check(client, [1])
                self.assertIn(fragment, str(caught.exception))


# --------------------------------------------------------------------------
# Tasks: tool calls that outlive their request (2025-11-25 and 2026-07-28)
# --------------------------------------------------------------------------

TASKS_META = dict(MODERN_META, **{"io.modelcontextprotocol/clientCapabilities": {
    "extensions": {"io.modelcontextprotocol/tasks": {}}}})
TASKS_CONFIG = os.path.join(HERE, "examples", "configs", "tasks.json")


class TaskStoreTests(unittest.TestCase):
    """The store in-process: bounded, private, forgotten after the ttl."""

    def run_async(self, coroutine):
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(coroutine)
        finally:
            loop.close()

    def test_bounded_and_forgotten(self):
        async def scenario():
            store = mcpstudio.TaskStore(limit=2)
            session = object()
            ctx = mcpstudio.CallContext(session, 1)
            hold = asyncio.get_running_loop().create_future()

            async def call(result):
                await hold
                return result
            first = store.start(call({"content": [], "isError": False}), ctx, 60000)
            second = store.start(call({"content": [{"type": "text", "text": "no"}], "isError": True}), ctx, 60000)
            self.assertEqual(ctx.task, second.id)
            self.assertRegex(first.id, r"^[0-9a-f]{32}$")
            with self.assertRaisesRegex(mcpstudio.McpError, "2 tasks are running"):  # full, none ended
                store.start(call({}), ctx, 1)
            hold.set_result(None)
            await asyncio.wait([first.job, second.job])
            self.assertEqual((first.status, second.status, second.message), ("completed", "failed", "no"))
            other = mcpstudio.CallContext(object(), 2)
            with self.assertRaisesRegex(mcpstudio.McpError, "Unknown task") as caught:  # another session's
                store.get(first.id, other)
            self.assertEqual(caught.exception.code, -32602)
            third = store.start(call({}), ctx, 60000)  # the oldest ended task makes room
            self.assertEqual(list(store.tasks), [second.id, third.id])
            second.expires = time.time() - 1  # past its ttl (and the grace after its end)
            with self.assertRaises(mcpstudio.McpError):
                store.get(second.id, ctx)
            self.assertEqual([t.id for t in store.owned(ctx)], [third.id])
            waiting = asyncio.get_running_loop().create_future()

            async def forever():
                await waiting
            fourth = store.start(forever(), ctx, 60000)
            fourth.created -= 61  # still running at the end of its ttl: stopped at the next look
            store.owned(ctx)
            self.assertEqual((fourth.status, fourth.message), ("cancelled", "its ttl of 60000 ms ran out"))
            await asyncio.sleep(0)
            self.assertTrue(fourth.job.cancelled())
            store.forget(session)  # the session ended: its tasks stop and go
            await asyncio.sleep(0)
            self.assertEqual(list(store.tasks), [])
            self.assertTrue(third.job.cancelled() or third.job.done())
        self.run_async(scenario())

    def test_wire_shapes_of_both_eras(self):
        async def scenario():  # a Task is made inside the server's event loop
            self.wire_shapes()
        self.run_async(scenario())

    def wire_shapes(self):
        task = mcpstudio.Task(None, 5000, modern=False)
        legacy = task.wire()
        self.assertEqual(set(legacy), {"taskId", "status", "createdAt", "lastUpdatedAt", "ttl", "pollInterval"})
        self.assertRegex(legacy["createdAt"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        modern = mcpstudio.Task(None, 5000, modern=True)
        modern.end("failed", error=mcpstudio.McpError(-32603, "broken"))
        self.assertEqual({k: v for k, v in modern.wire().items() if k not in ("taskId", "createdAt", "lastUpdatedAt")},
                         {"status": "failed", "statusMessage": "broken", "ttlMs": 5000})
        modern.end("completed", {"content": []})  # a terminal status never changes
        self.assertEqual(modern.status, "failed")


class TaskTests(ScratchDir):
    """Command tools as tasks, spoken to as clients of both eras would."""

    def task_call(self, server, name, arguments, task=None):
        return server.request("tools/call", {"name": name, "arguments": arguments, "task": task or {}})

    def test_handshake_era_lifecycle(self):
        # Declared, listed, created, polled, listed, waited for (tasks/result), announced, and the
        # same result a plain call gives, marked with its task.
        with McpProcess("sh", "-c", 'sleep "$1"; echo "slept $1"', "sh", "{seconds}") as server:
            capabilities = server.initialize()["result"]["capabilities"]
            self.assertEqual(capabilities["tasks"], {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
            self.assertEqual(server.request("tools/list")["result"]["tools"][0]["execution"], {"taskSupport": "optional"})
            created = server.request("tools/call", {"name": "sh", "arguments": {"seconds": "1"}, "task": {"ttl": 90000},
                                                    "_meta": {"progressToken": "tp"}})["result"]
            task = created["task"]
            self.assertEqual((task["status"], task["ttl"], task["pollInterval"]), ("working", 90000, 1000))
            self.assertEqual(server.request("tasks/get", {"taskId": task["taskId"]})["result"]["status"], "working")
            listed = server.request("tasks/list")["result"]["tasks"]
            self.assertEqual([t["taskId"] for t in listed], [task["taskId"]])
            result = server.request("tasks/result", {"taskId": task["taskId"]})["result"]
            self.assertEqual(text_of(result), "slept 1\n")
            self.assertEqual(result["_meta"]["io.modelcontextprotocol/related-task"], {"taskId": task["taskId"]})
            done = server.request("tasks/get", {"taskId": task["taskId"]})["result"]
            self.assertEqual(done["status"], "completed")
            self.assertNotIn("pollInterval", done)
            self.assertTrue(wait_until(lambda: server.notifications_of("notifications/tasks/status")))
            note = server.notifications_of("notifications/tasks/status")[0]["params"]
            self.assertEqual((note["taskId"], note["status"]), (task["taskId"], "completed"))
            progress = [n["params"] for n in server.notifications_of("notifications/progress")]  # while it ran
            self.assertTrue(progress)
            self.assertTrue(all(p["progressToken"] == "tp" and p["_meta"] == {
                "io.modelcontextprotocol/related-task": {"taskId": task["taskId"]}} for p in progress), progress)
            plain = server.call("sh", {"seconds": "0"})  # no `task`: a plain call, as before
            self.assertEqual(text_of(plain), "slept 0\n")
            capped = self.task_call(server, "sh", {"seconds": "0"}, {"ttl": 10 ** 12})["result"]["task"]
            self.assertEqual(capped["ttl"], mcpstudio.TASK_MAX_TTL_MS)
            for bad in ({"ttl": -1}, {"ttl": "1"}, {"ttl": 1.5}, []):
                reply = server.request("tools/call", {"name": "sh", "arguments": {"seconds": "0"}, "task": bad})
                self.assertEqual(reply["error"]["code"], -32602, reply)
            for method in ("tasks/get", "tasks/result", "tasks/cancel"):
                reply = server.request(method, {"taskId": "0" * 32})
                self.assertEqual(reply["error"]["code"], -32602, reply)
                self.assertIn("Unknown task", reply["error"]["message"])
            self.assertEqual(server.request("tasks/list", {"cursor": "nope"})["error"]["code"], -32602)

    @unittest.skipUnless(sys.platform.startswith("linux"), "walks /proc")
    def test_cancel_stops_the_process_group(self):
        # tasks/cancel answers the cancelled task at once, and the command and its child are gone;
        # a second cancel is -32602 (already ended), and tasks/result says there is no result.
        sleeper, out = self.pid_sleeper(), os.path.join(self.dir, "pids")
        with McpProcess(PY, sleeper, out) as server:
            server.initialize()
            name = server.request("tools/list")["result"]["tools"][0]["name"]
            task = self.task_call(server, name, {})["result"]["task"]
            pids = self.read_pids(out)
            cancelled = server.request("tasks/cancel", {"taskId": task["taskId"]})["result"]
            self.assertEqual(cancelled["status"], "cancelled")
            self.assertTrue(wait_until(lambda: not any(alive(pid) for pid in pids)), pids)
            again = server.request("tasks/cancel", {"taskId": task["taskId"]})
            self.assertEqual(again["error"]["code"], -32602)
            self.assertIn("already ended", again["error"]["message"])
            self.assertIn("cancelled", server.request("tasks/result", {"taskId": task["taskId"]})["error"]["message"])

    def test_stdin_closed_stops_running_tasks(self):
        sleeper, out = self.pid_sleeper(), os.path.join(self.dir, "pids")
        server = McpProcess(PY, sleeper, out)
        with server:
            server.initialize()
            self.task_call(server, server.request("tools/list")["result"]["tools"][0]["name"], {})
            pids = self.read_pids(out)
            self.assertEqual(server.close(), 0)
        self.assertTrue(wait_until(lambda: not any(alive(pid) for pid in pids)), pids)

    def test_required_and_forbidden(self):
        with McpProcess("--task-support", "required", "echo", "{message}") as server:
            server.initialize()
            self.assertEqual(server.request("tools/list")["result"]["tools"][0]["execution"], {"taskSupport": "required"})
            plain = server.request("tools/call", {"name": "echo", "arguments": {"message": "hi"}})
            self.assertEqual(plain["error"]["code"], -32601)
            self.assertIn("runs only as a task", plain["error"]["message"])
            task = self.task_call(server, "echo", {"message": "hi"})["result"]["task"]
            self.assertEqual(text_of(server.request("tasks/result", {"taskId": task["taskId"]})["result"]), "hi\n")
        with McpProcess("--task-support", "forbidden", "echo", "{message}") as server:
            server.initialize()
            self.assertNotIn("execution", server.request("tools/list")["result"]["tools"][0])
            reply = self.task_call(server, "echo", {"message": "hi"})
            self.assertEqual(reply["error"]["code"], -32601)
            self.assertIn("does not run as a task", reply["error"]["message"])
        proc = subprocess.run(SERVER + ["--task-support", "sometimes", "echo", "{m}"], capture_output=True, text=True,
                              timeout=WAIT, stdin=subprocess.DEVNULL)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("--task-support sometimes: expected one of forbidden, optional, required", proc.stderr)

    def test_tool_errors_and_commands_that_cannot_start(self):
        # 2025-11-25: a command that fails makes a failed task whose result is the tool error; one
        # that cannot start at all fails with a JSON-RPC error (-32603), which tasks/result answers.
        with McpProcess("serve", "--config", TASKS_CONFIG) as server:
            server.initialize()
            tools = {t["name"]: t.get("execution") for t in server.request("tools/list")["result"]["tools"]}
            self.assertEqual(tools, {"greet": None, "slow_compute": {"taskSupport": "optional"},
                                     "failing_job": {"taskSupport": "required"},
                                     "test_tool_with_task": {"taskSupport": "required"},
                                     "confirm_delete": {"taskSupport": "optional"},
                                     "protocol_error_job": {"taskSupport": "required"}})
            failing = self.task_call(server, "failing_job", {})["result"]["task"]["taskId"]
            result = server.request("tasks/result", {"taskId": failing})["result"]
            self.assertTrue(result["isError"])
            self.assertIn("failing_job failed on purpose", text_of(result))
            task = server.request("tasks/get", {"taskId": failing})["result"]
            self.assertEqual(task["status"], "failed")
            self.assertIn("exited with code 3", task["statusMessage"])
            broken = self.task_call(server, "protocol_error_job", {})["result"]["task"]["taskId"]
            error = server.request("tasks/result", {"taskId": broken})["error"]
            self.assertEqual(error["code"], -32603)
            self.assertIn("Command not found", error["message"])
            self.assertEqual(server.request("tasks/get", {"taskId": broken})["result"]["status"], "failed")

    def test_2026_era_over_http(self):
        # The server decides: a quick call answers plainly, a slow one with a flat CreateTaskResult;
        # tasks/get inlines the result; no extension, no task (and -32021 for a required tool).
        with HttpServerProcess("serve", "--config", TASKS_CONFIG) as server:
            def call(name, arguments, meta=TASKS_META, request_id=1):
                status, _, text = server.modern("tools/call", {"name": name, "arguments": arguments, "_meta": meta},
                                                request_id)
                return status, server.messages(text)[-1]
            capabilities = server.messages(server.modern("server/discover")[2])[-1]["result"]["capabilities"]
            self.assertIn("io.modelcontextprotocol/tasks", capabilities["extensions"])
            self.assertNotIn("tasks", capabilities)
            _, quick = call("slow_compute", {"seconds": 0})
            self.assertEqual(quick["result"]["resultType"], "complete")
            self.assertIn("computed after 0 s", text_of(quick["result"]))
            _, slow = call("slow_compute", {"seconds": 1.5, "label": "x"})
            created = slow["result"]
            self.assertEqual(created["resultType"], "task")
            self.assertEqual((created["status"], created["ttlMs"], created["pollIntervalMs"]),
                             ("working", mcpstudio.TASK_TTL_MS, 1000))
            self.assertFalse({"task", "ttl", "pollInterval", "result"} & set(created))

            def get(task_id, meta=TASKS_META):
                status, _, text = server.modern("tasks/get", {"taskId": task_id, "_meta": meta},
                                                headers={"Mcp-Name": task_id})
                return server.messages(text)[-1]
            self.assertEqual(get(created["taskId"])["result"]["status"], "working")
            self.assertTrue(wait_until(lambda: get(created["taskId"])["result"]["status"] == "completed"))
            done = get(created["taskId"])["result"]
            self.assertEqual(text_of(done["result"]), "computed after 1.5 s (x)\n")
            self.assertNotIn("io.modelcontextprotocol/related-task", done["result"].get("_meta", {}))
            self.assertEqual(get(created["taskId"], MODERN_META)["error"]["code"], -32021)  # no extension
            _, plain = call("slow_compute", {"seconds": 1}, MODERN_META)  # no extension: waited for
            self.assertEqual(plain["result"]["resultType"], "complete")
            status, refused = call("failing_job", {}, MODERN_META)
            self.assertEqual(refused["error"]["code"], -32021)
            self.assertEqual(refused["error"]["data"],
                             {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}})
            _, failing = call("failing_job", {})
            self.assertTrue(wait_until(lambda: get(failing["result"]["taskId"])["result"]["status"] == "completed"))
            self.assertTrue(get(failing["result"]["taskId"])["result"]["result"]["isError"])
            _, broken = call("protocol_error_job", {})
            self.assertTrue(wait_until(lambda: get(broken["result"]["taskId"])["result"]["status"] == "failed"))
            self.assertEqual(get(broken["result"]["taskId"])["result"]["error"]["code"], -32603)
            _, long = call("slow_compute", {"seconds": 60})
            status, _, text = server.modern("tasks/cancel", {"taskId": long["result"]["taskId"], "_meta": TASKS_META},
                                            headers={"Mcp-Name": long["result"]["taskId"]})
            self.assertEqual({k: v for k, v in server.messages(text)[-1]["result"].items() if k != "_meta"},
                             {"resultType": "complete"})
            self.assertEqual(get(long["result"]["taskId"])["result"]["status"], "cancelled")
            for method in ("tasks/result", "tasks/list"):
                status, _, text = server.modern(method, {"taskId": created["taskId"], "_meta": TASKS_META})
                self.assertEqual(server.messages(text)[-1]["error"]["code"], -32601)
            status, _, text = server.modern("tasks/get", {"taskId": created["taskId"], "_meta": TASKS_META},
                                            headers={"Mcp-Name": "another"})
            self.assertEqual((status, server.messages(text)[-1]["error"]["code"]), (400, -32020))

    def test_a_task_outlives_its_http_request_and_stays_in_its_session(self):
        # 2025-11-25 over HTTP: the client that made a task leaves, comes back on a new connection
        # with the same session and reads the result; another session never sees it; a deleted
        # session's running tasks stop.
        sleeper, out = self.pid_sleeper(), os.path.join(self.dir, "pids")
        config = os.path.join(self.dir, "tasks.json")
        with open(config, "w") as f:
            json.dump({"tools": [{"name": "slow", "command": "sh -c 'sleep 1; echo finished'"},
                                 {"name": "sleeper", "command_template": "%s %s %s" % (PY, sleeper, out)}]}, f)
        with HttpServerProcess("serve", "--config", config) as server:
            session, other = server.initialize_session(), server.initialize_session()

            def post(method, params, sid=session):
                status, _, text = server.post({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}, session=sid)
                return server.messages(text)[-1]
            task = post("tools/call", {"name": "slow", "arguments": {}, "task": {}})["result"]["task"]
            self.assertEqual(post("tasks/get", {"taskId": task["taskId"]}, other)["error"]["code"], -32602)
            self.assertEqual(post("tasks/list", {}, other)["result"]["tasks"], [])
            time.sleep(1.5)  # no connection open while it runs
            self.assertEqual(text_of(post("tasks/result", {"taskId": task["taskId"]})["result"]), "finished\n")
            post("tools/call", {"name": "sleeper", "arguments": {}, "task": {}})
            pids = self.read_pids(out)
            status, _, _ = server.post(None, session=session, method="DELETE")
            self.assertEqual(status, 200)
            self.assertTrue(wait_until(lambda: not any(alive(pid) for pid in pids)), pids)

    def test_scripts_and_config_say_how_their_tools_run(self):
        folder = os.path.join(self.dir, "scripts")
        os.makedirs(folder)
        for name, meta in (("quick", {"taskSupport": "forbidden"}), ("build", {}), ("odd", {"taskSupport": "maybe"})):
            self.script(os.path.join("scripts", name), """\
                #!/bin/sh
                if [ "$1" = --help ]; then echo '%s'; exit 0; fi
                echo ran
                """ % json.dumps(meta))
        with McpProcess("--root-directory", folder) as server:
            server.initialize()
            tools = {t["name"]: t.get("execution") for t in server.request("tools/list")["result"]["tools"]}
            self.assertEqual(tools, {"quick": None, "build": {"taskSupport": "optional"}})
            self.assertIn("`taskSupport` in its --help metadata must be one of forbidden, optional, required",
                          server.stderr_when(lambda text: "odd" in text))
            task = self.task_call(server, "build", {})["result"]["task"]
            self.assertEqual(text_of(server.request("tasks/result", {"taskId": task["taskId"]})["result"]), "ran\n")
        config = os.path.join(self.dir, "c.json")
        for data, where in (({"taskSupport": "yes", "tools": []}, "taskSupport"),
                            ({"tools": [{"name": "t", "command": "true", "taskSupport": "Optional"}]}, "tools[0].taskSupport")):
            with open(config, "w") as f:
                json.dump(data, f)
            proc = subprocess.run(SERVER + ["check", "--config", config], capture_output=True, text=True, timeout=WAIT,
                                  stdin=subprocess.DEVNULL)
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertIn("c.json: %s: expected \"forbidden\", \"optional\", \"required\"" % where, proc.stderr)
        with open(config, "w") as f:
            json.dump({"taskSupport": "required", "tools": [{"name": "a", "command": "true"},
                                                            {"name": "b", "command": "true", "taskSupport": "forbidden"}]}, f)
        with McpProcess("serve", "--config", config) as server:
            server.initialize()
            tools = {t["name"]: t.get("execution") for t in server.request("tools/list")["result"]["tools"]}
            self.assertEqual(tools, {"a": {"taskSupport": "required"}, "b": None})


class AskTests(ScratchDir):
    """A config parameter with `ask`: the user is asked for it (MCP elicitation) when a call leaves it out."""

    def config(self) -> str:
        path = os.path.join(self.dir, "ask.json")
        with open(path, "w") as f:
            json.dump({"tools": [{"name": "deploy", "command_template": "echo deploying {version} to {target}",
                                  "parameters": {"version": {"type": "string"},
                                                 "target": {"type": "string", "enum": ["staging", "production"],
                                                            "ask": "Deploy where?"}}}]}, f)
        return path

    def test_asked_in_the_handshake_era(self):
        with McpProcess("serve", "--config", self.config()) as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                                          "clientInfo": {"name": "t", "version": "0"}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            schema = server.request("tools/list")["result"]["tools"][0]["inputSchema"]
            self.assertEqual(schema["required"], ["version"])  # the model may leave `target` out
            for answer, expected in (({"action": "accept", "content": {"target": "staging", "other": 1}},
                                      "deploying 1.2 to staging\n"),
                                     ({"action": "decline"}, 'Not run: the user was asked for target and answered "decline".')):
                with self.subTest(answer=answer):
                    server.next_id += 1
                    call_id = server.next_id
                    server.send({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                                 "params": {"name": "deploy", "arguments": {"version": "1.2"}}})
                    self.assertTrue(wait_until(lambda: server.notifications_of("elicitation/create")))
                    with server.lock:
                        asked = server.notifications.pop()
                    self.assertEqual(asked["params"]["message"], "target: Deploy where?")
                    self.assertEqual(asked["params"]["requestedSchema"], {
                        "type": "object", "required": ["target"],
                        "properties": {"target": {"type": "string", "enum": ["staging", "production"], "title": "target"}}})
                    server.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})
                    self.assertEqual(text_of(server.wait_response(call_id)["result"]), expected)
            given = server.call("deploy", {"version": "1.3", "target": "production"})  # given: nothing asked
            self.assertEqual(text_of(given), "deploying 1.3 to production\n")
        with McpProcess("serve", "--config", self.config()) as server:
            server.initialize()  # no elicitation capability: the call says what to give
            result = server.call("deploy", {"version": "1.2"})
            self.assertTrue(result["isError"])
            self.assertIn("target is asked of the user when left out, and this client cannot ask", text_of(result))

    def test_asked_through_an_input_required_result(self):
        # 2026-07-28 (SEP-2322): the call answers input_required; the client retries with the answer.
        with HttpServerProcess("serve", "--config", self.config()) as server:
            meta = dict(MODERN_META, **{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})

            def call(extra):
                params = dict({"name": "deploy", "arguments": {"version": "2.0"}, "_meta": meta}, **extra)
                return server.messages(server.modern("tools/call", params)[2])[-1]
            first = call({})["result"]
            self.assertEqual(first["resultType"], "input_required")
            request = first["inputRequests"]["arguments"]
            self.assertEqual((request["method"], request["params"]["requestedSchema"]["required"]),
                             ("elicitation/create", ["target"]))
            done = call({"inputResponses": {"arguments": {"action": "accept", "content": {"target": "staging"}}}})
            self.assertEqual(text_of(done["result"]), "deploying 2.0 to staging\n")
            self.assertEqual(call({"inputResponses": []})["error"]["code"], -32602)

    def test_config_mistakes(self):
        path = os.path.join(self.dir, "bad.json")
        for parameter, message in (({"ask": "Which?", "default": "a"}, "parameters.p.ask: a parameter the user is asked"),
                                   ({"ask": 3}, "parameters.p.ask: expected"),
                                   ({"ask": True, "type": "array"}, "parameters.p.ask: a form asks for a string")):
            with self.subTest(parameter=parameter):
                with open(path, "w") as f:
                    json.dump({"tools": [{"name": "t", "command_template": "echo {p}", "parameters": {"p": parameter}}]}, f)
                proc = subprocess.run(SERVER + ["check", "--config", path], capture_output=True, text=True,
                                      timeout=WAIT, stdin=subprocess.DEVNULL)
                self.assertEqual(proc.returncode, 1)
                self.assertIn(message, proc.stderr)


class InputRequiredTests(AggregatorCase):
    """Issue 18: multi round-trip requests (SEP-2322) through the aggregator, in every pairing of eras."""

    ELICIT_AND_ROOTS = {"elicitation": {}, "roots": {}}
    EVERYTHING = {"elicitation": {}, "roots": {}, "sampling": {}}

    def config(self, *args) -> str:
        """A config of the fake server `up`: with `ask` and `mrtr` unless it speaks both eras (`--dual`:
        then `mrtr` is one of the tools it offers only in 2026-07-28)."""
        path = os.path.join(self.dir, "agg.json")
        ask = [] if "--dual" in args else ["--ask"]
        with open(path, "w") as f:
            json.dump({"mcpServers": {"up": {"command": PY, "args": [self.fake, "--name", "up"] + ask + list(args)}}}, f)
        return path

    def call(self, server, name, extra=None, capabilities=None, request_id=1):
        params = dict({"name": name, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/clientCapabilities": capabilities or {}}}, **(extra or {}))
        status, _, text = server.modern("tools/call", params, request_id)
        return status, server.messages(text)[-1]

    def test_modern_client_and_server_pass_it_through(self):
        # The server's input_required results reach the client untouched, its retries (with the server's own
        # requestState) reach the server, and the server sees the capabilities of each request.
        with HttpServerProcess("serve", "--config", self.config("--modern-only"), env=self.env) as server:
            _, first = self.call(server, "up__mrtr", capabilities=self.ELICIT_AND_ROOTS)
            self.assertEqual(first["result"]["resultType"], "input_required")
            self.assertEqual(first["result"]["requestState"], "round-2")
            self.assertEqual(first["result"]["inputRequests"]["who"]["method"], "elicitation/create")
            _, second = self.call(server, "up__mrtr", {"requestState": "round-2", "inputResponses": {
                "who": {"action": "accept", "content": {"name": "Ada"}}}}, self.ELICIT_AND_ROOTS)
            self.assertEqual((second["result"]["requestState"], sorted(second["result"]["inputRequests"])),
                             ("round-3:Ada", ["think", "where"]))
            _, done = self.call(server, "up__mrtr", {"requestState": "round-3:Ada", "inputResponses": {
                "where": {"roots": [{"uri": "file:///work"}]},
                "think": {"role": "assistant", "model": "m", "content": {"type": "text", "text": "hi"}}}},
                self.ELICIT_AND_ROOTS)
            self.assertEqual(done["result"]["resultType"], "complete")
            self.assertEqual(text_of(done["result"]), "hello Ada at file:///work, who says hi (client: elicitation,roots)")

    def test_mcpstudios_own_answers_are_not_forwarded(self):
        # Issue 41.20: the `confirm` answer mcpstudio asked for itself went on to the server inside inputResponses;
        # the server gets only the answers to its own questions.
        inputs = os.path.join(self.dir, "inputs")
        path = self.config("--modern-only", "--inputs-file", inputs)
        with open(path) as f:
            data = json.load(f)
        data["mcpServers"]["up"]["confirm"] = True
        with open(path, "w") as f:
            json.dump(data, f)
        yes = {"action": "accept", "content": {"run": True}}
        with HttpServerProcess("serve", "--config", path, env=self.env) as server:
            _, first = self.call(server, "up__mrtr", capabilities=self.ELICIT_AND_ROOTS)
            self.assertEqual(list(first["result"]["inputRequests"]), ["confirm"])
            _, second = self.call(server, "up__mrtr", {"inputResponses": {"confirm": yes}}, self.ELICIT_AND_ROOTS)
            self.assertEqual(second["result"]["requestState"], "round-2")
            _, third = self.call(server, "up__mrtr", {"requestState": "round-2", "inputResponses": {
                "confirm": yes, "who": {"action": "accept", "content": {"name": "Ada"}}}}, self.ELICIT_AND_ROOTS)
            self.assertEqual(third["result"]["requestState"], "round-3:Ada")
        with open(inputs) as f:
            self.assertEqual([json.loads(line) for line in f], [[], ["who"]])

    def test_handshake_client_is_asked_for_a_modern_servers_input(self):
        # mcpstudio asks the client each round's questions (elicitation, then roots) and retries the server.
        with McpProcess("serve", "--config", self.config("--modern-only"), env=self.env) as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": self.EVERYTHING,
                                          "clientInfo": {"name": "test", "version": "0"}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            server.send({"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": {"name": "up__mrtr", "arguments": {}}})
            for count, method, answer in ((1, "elicitation/create", {"action": "accept", "content": {"name": "Bo"}}),
                                          (2, "roots/list", {"roots": [{"uri": "file:///b"}, {"uri": "file:///c"}]}),
                                          (3, "sampling/createMessage", {"role": "assistant", "model": "m", "content": {
                                              "type": "text", "text": "yo"}})):
                self.assertTrue(wait_until(lambda n=count: len([m for m in list(server.notifications) if "id" in m]) >= n),
                                server.context())
                asked = [m for m in list(server.notifications) if "id" in m][count - 1]
                self.assertEqual(asked["method"], method)
                server.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})
            result = server.wait_response("c1")["result"]
            self.assertEqual(text_of(result), "hello Bo at file:///b,file:///c, who says yo (client: elicitation,roots,sampling)")
        with McpProcess("serve", "--config", self.config("--modern-only"), env=self.env) as server:
            server.initialize()  # a client that offers no elicitation: the call says so
            reply = server.request("tools/call", {"name": "up__mrtr", "arguments": {}})
            self.assertEqual(reply["error"]["code"], -32600)
            self.assertIn('server `up` needs "elicitation/create" from the client, which it does not offer',
                          reply["error"]["message"])

    def test_a_server_of_both_eras_is_spoken_to_in_the_clients(self):
        # A server that answers server/discover after its handshake is addressed per request: a 2026-07-28
        # client's calls reach it in that era (with that client's capabilities), a handshake-era client's in
        # the handshake era, and a tool it offers only in 2026-07-28 is listed and called in that era (its
        # input_required rounds asked of a handshake-era client).
        eras = os.path.join(self.dir, "eras")

        def seen():
            with open(eras) as f:
                return [line.split() for line in f if line.startswith("tools/call")]
        with HttpServerProcess("serve", "--config", self.config("--dual", "--era-file", eras), env=self.env) as server:
            _, echoed = self.call(server, "up__echo", {"arguments": {"text": "new"}}, self.ELICIT_AND_ROOTS)
            self.assertEqual(text_of(echoed["result"]), "up: new")
            _, first = self.call(server, "up__mrtr", capabilities=self.ELICIT_AND_ROOTS)
            self.assertEqual(first["result"]["requestState"], "round-2")  # the server's own, untouched
            self.assertEqual(seen(), [["tools/call", "echo", "2026"], ["tools/call", "mrtr", "2026"]])
        os.remove(eras)
        with McpProcess("serve", "--config", self.config("--dual", "--era-file", eras), env=self.env) as server:
            server.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": self.EVERYTHING,
                                          "clientInfo": {"name": "test", "version": "0"}})
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            names = [t["name"] for t in server.request("tools/list")["result"]["tools"]]
            self.assertIn("up__mrtr", names)  # listed only in 2026-07-28, listed here all the same
            self.assertEqual(text_of(server.call("up__echo", {"text": "old"})), "up: old")
            server.send({"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": {"name": "up__mrtr", "arguments": {}}})
            for count, answer in ((1, {"action": "accept", "content": {"name": "Cy"}}), (2, {"roots": []}),
                                  (3, {"role": "assistant", "model": "m", "content": {"type": "text", "text": "ok"}})):
                self.assertTrue(wait_until(lambda n=count: len([m for m in list(server.notifications) if "id" in m]) >= n),
                                server.context())
                asked = [m for m in list(server.notifications) if "id" in m][count - 1]
                server.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})
            self.assertIn("hello Cy", text_of(server.wait_response("c1")["result"]))
            self.assertEqual(seen(), [["tools/call", "echo", "handshake"], ["tools/call", "mrtr", "2026"],
                                      ["tools/call", "mrtr", "2026"], ["tools/call", "mrtr", "2026"]])

    def test_a_2026_client_listens_for_resource_updates(self):
        # subscriptions/listen with resourceSubscriptions: mcpstudio subscribes at the server that lists the
        # URI, acknowledges it, and passes the server's notifications/resources/updated on, tagged.
        import http.client
        with HttpServerProcess("serve", "--config", self.config(), env=self.env) as server:
            server.modern("resources/list")
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT)
            body = {"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen", "params": {
                "_meta": MODERN_META, "notifications": {"toolsListChanged": True,
                                                        "resourceSubscriptions": ["fake://up/info", "nope://x"]}}}
            connection.request("POST", "/mcp", body=json.dumps(body).encode(), headers={
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"})
            response = connection.getresponse()
            events = [json.loads(HttpResumeTests.next_event(response)["data"]) for _ in range(2)]
            connection.close()
            ack, updated = events
            self.assertEqual(ack["method"], "notifications/subscriptions/acknowledged")
            self.assertEqual(ack["params"]["notifications"], {"toolsListChanged": True,
                                                              "resourceSubscriptions": ["fake://up/info"]})
            self.assertEqual(updated["method"], "notifications/resources/updated")
            self.assertEqual(updated["params"], {"uri": "fake://up/info",
                                                 "_meta": {"io.modelcontextprotocol/subscriptionId": "sub-1"}})

    def test_a_handshake_servers_request_becomes_input_required(self):
        # The server's elicitation/create during a 2026-07-28 client's call: the client gets input_required
        # with mcpstudio's requestState; its retry answers the server, whose call then completes.
        with HttpServerProcess("serve", "--config", self.config(), env=self.env) as server:
            arguments = {"arguments": {"method": "elicitation/create", "cancel_after": 30}}
            _, first = self.call(server, "up__ask", arguments, self.ELICIT_AND_ROOTS)
            result = first["result"]
            self.assertEqual(result["resultType"], "input_required", first)
            self.assertEqual(result["inputRequests"], {"elicitation-1": {"method": "elicitation/create", "params": {}}})
            answer = {"action": "accept", "content": {"colour": "green"}}
            _, wrong = self.call(server, "up__ask", dict(arguments, requestState="made-up",
                                                         inputResponses={"elicitation-1": answer}), self.ELICIT_AND_ROOTS)
            self.assertEqual(wrong["error"]["code"], -32602)
            self.assertIn("unknown `requestState`", wrong["error"]["message"])
            _, done = self.call(server, "up__ask", dict(arguments, requestState=result["requestState"],
                                                        inputResponses={"elicitation-1": answer}), self.ELICIT_AND_ROOTS)
            self.assertEqual(json.loads(text_of(done["result"]))["result"], answer)
            _, again = self.call(server, "up__ask", dict(arguments, requestState=result["requestState"],
                                                         inputResponses={"elicitation-1": answer}), self.ELICIT_AND_ROOTS)
            self.assertEqual(again["error"]["code"], -32602)  # a requestState is good for one retry
            _, refused = self.call(server, "up__ask", {"arguments": {"method": "elicitation/create"}})  # not declared
            self.assertEqual(json.loads(text_of(refused["result"]))["error"]["code"], -32601)


@unittest.skipUnless(_sdk_available(), "the official MCP Python SDK is not installed (set MCPSTUDIO_SDK_PYTHON)")
class SdkMixedEraTests(AggregatorCase):
    """Issue 18 with a real client: the official Python SDK in one era, an upstream in the other."""

    run_client = PythonSdkInteropTests.run_client
    CALLBACKS = """
        import anyio, json, os, sys
        import mcp
        from mcp import ClientSession, StdioServerParameters, stdio_client, types

        asked = []

        async def elicitation(context, params):
            asked.append("elicitation")
            return types.ElicitResult(action="accept", content={"name": "Grace"})

        async def roots(context):
            asked.append("roots")
            return types.ListRootsResult(roots=[types.Root(uri="file:///sdk/root", name="root")])

        async def sampling(context, params):
            asked.append("sampling")
            return types.CreateMessageResult(role="assistant", model="test-model", stopReason="endTurn",
                                             content=types.TextContent(type="text", text="sampled"))

        callbacks = dict(elicitation_callback=elicitation, list_roots_callback=roots, sampling_callback=sampling)
        greet = types.PromptReference(type="ref/prompt", name="up__greet")
        params = StdioServerParameters(command=os.environ["SERVER_PY"], env=dict(os.environ),
                                       args=[os.environ["MCPSTUDIO"], "serve", "--config", os.environ["CONFIG"]])
        """

    def config(self, *args) -> str:
        path = os.path.join(self.dir, "agg.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {"up": {"command": PY, "args": [self.fake, "--name", "up", "--ask"] + list(args)}}}, f)
        return path

    def test_2026_client_in_front_of_a_handshake_server(self):
        # mcp.Client negotiates 2026-07-28; the upstream's elicitation/create, sampling/createMessage and
        # roots/list come back to it as input_required results, which the SDK answers with its callbacks and
        # retries; its completion reaches the upstream.
        out = self.run_client(self.CALLBACKS + """
        async def main():
            texts = []
            async with mcp.Client(params, **callbacks) as client:
                for method, params_ in (("elicitation/create", {"message": "Your name?", "requestedSchema": {
                                            "type": "object", "properties": {"name": {"type": "string"}}}}),
                                        ("sampling/createMessage", {"maxTokens": 5, "messages": [
                                            {"role": "user", "content": {"type": "text", "text": "hi"}}]}),
                                        ("roots/list", {})):
                    result = await client.call_tool("up__ask", {"method": method, "params": params_, "cancel_after": 30})
                    texts.append(json.loads(result.content[0].text)["result"])
                completed = await client.complete(greet, {"name": "who", "value": "Gr"})
                print(json.dumps({"version": client.protocol_version, "asked": asked, "answers": texts,
                                  "completed": completed.completion.values}))
        anyio.run(main)
        """, CONFIG=self.config(), XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        self.assertEqual((out["version"], out["asked"]), ("2026-07-28", ["elicitation", "sampling", "roots"]))
        elicited, sampled, rooted = out["answers"]
        self.assertEqual(elicited, {"action": "accept", "content": {"name": "Grace"}})
        self.assertEqual(sampled["content"], {"type": "text", "text": "sampled"})
        self.assertEqual(rooted["roots"][0]["uri"], "file:///sdk/root")
        self.assertEqual(out["completed"], ["Gr-up-handshake"])

    def test_handshake_client_in_front_of_a_2026_server(self):
        # ClientSession speaks 2025-11-25; the 2026-07-28 upstream's two rounds of input_required are asked of
        # it as elicitation/create and roots/list, and the upstream sees its capabilities.
        out = self.run_client(self.CALLBACKS + """
        async def main():
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write, **callbacks) as session:
                    await session.initialize()
                    result = await session.call_tool("up__mrtr", {})
                    completed = await session.complete(greet, {"name": "who", "value": "Gr"})
                    print(json.dumps({"asked": asked, "text": result.content[0].text,
                                      "completed": completed.completion.values}))
        anyio.run(main)
        """, CONFIG=self.config("--modern-only"), XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        self.assertEqual(out["asked"], ["elicitation", "roots", "sampling"])
        self.assertEqual(out["text"], "hello Grace at file:///sdk/root, who says sampled (client: elicitation,roots,sampling)")
        self.assertEqual(out["completed"], ["Gr-up-2026"])


class AggregatorTaskTests(AggregatorCase):
    """Tasks through the aggregator: an upstream that runs tasks runs its own; one that does not is called
    plainly inside mcpstudio's task; either way the client sees mcpstudio's task ids only."""

    def test_an_upstreams_tasks_pass_through(self):
        log = os.path.join(self.dir, "upstream.log")
        path = os.path.join(self.dir, "agg.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {"jobs": {"command": PY, "args": SERVER[1:] + [
                "serve", "--config", TASKS_CONFIG, "--log", log]}}}, f)

        def upstream_saw(method):
            with open(log) as f:
                return [json.loads(line.split(" ", 3)[3]) for line in f
                        if " WIRE -> " in line and '"method":"%s"' % method in line.replace(" ", "")]
        with McpProcess("serve", "--config", path, env=self.env) as server:
            server.initialize()
            tools = {t["name"]: t.get("execution") for t in server.request("tools/list")["result"]["tools"]}
            self.assertEqual((tools["jobs__slow_compute"], tools["jobs__failing_job"], tools["jobs__greet"]),
                             ({"taskSupport": "optional"}, {"taskSupport": "required"}, {"taskSupport": "optional"}))
            mine = server.request("tools/call", {"name": "jobs__slow_compute", "arguments": {"seconds": 1, "label": "a"},
                                                 "task": {}})["result"]["task"]["taskId"]
            result = server.request("tasks/result", {"taskId": mine})["result"]
            self.assertEqual(text_of(result), "computed after 1 s (a)\n")
            self.assertEqual(result["_meta"]["io.modelcontextprotocol/related-task"], {"taskId": mine})
            theirs = [m["params"]["taskId"] for m in upstream_saw("tasks/result")]
            self.assertEqual(len(theirs), 1)
            self.assertNotEqual(theirs[0], mine)  # routed: the upstream's id never reaches the client
            self.assertTrue(upstream_saw("tasks/get"))
            plain = server.request("tools/call", {"name": "jobs__failing_job", "arguments": {}})
            self.assertEqual(plain["error"]["code"], -32601)
            failing = server.request("tools/call", {"name": "jobs__failing_job", "arguments": {}, "task": {}})
            failing = server.request("tasks/result", {"taskId": failing["result"]["task"]["taskId"]})["result"]
            self.assertTrue(failing["isError"])
            greet = server.request("tools/call", {"name": "jobs__greet", "arguments": {"name": "Ann"}, "task": {}})
            greeted = server.request("tasks/result", {"taskId": greet["result"]["task"]["taskId"]})["result"]
            self.assertEqual(text_of(greeted), "Hello, Ann!")  # the upstream forbids tasks: called plainly
            self.assertFalse([m for m in upstream_saw("tools/call") if m["params"]["name"] == "greet" and "task" in m["params"]])
            long = server.request("tools/call", {"name": "jobs__slow_compute", "task": {},
                                                 "arguments": {"seconds": 60, "label": "cancel-through"}})
            long = long["result"]["task"]["taskId"]
            if sys.platform.startswith("linux"):
                self.assertTrue(wait_until(lambda: processes_with("cancel-through")))
            self.assertEqual(server.request("tasks/cancel", {"taskId": long})["result"]["status"], "cancelled")
            self.assertTrue(wait_until(lambda: upstream_saw("tasks/cancel")))
            if sys.platform.startswith("linux"):
                self.assertTrue(wait_until(lambda: not processes_with("cancel-through")))


    def test_a_2026_upstreams_own_task_is_polled_inside_mcpstudios(self):
        # A 2026-07-28 client that declares the tasks extension, an upstream (another mcpstudio, which speaks
        # both eras) whose tool requires a task: the call reaches it in 2026-07-28 with the extension, it answers
        # with a task of its own, mcpstudio polls that one and completes its own task with the result.
        path = os.path.join(self.dir, "agg.json")
        with open(path, "w") as f:
            json.dump({"mcpServers": {"jobs": {"command": PY, "args": SERVER[1:] + ["serve", "--config", TASKS_CONFIG]}}}, f)
        with HttpServerProcess("serve", "--config", path, env=self.env) as server:
            def ask(method, params):
                headers = {"Mcp-Name": params["taskId"]} if "taskId" in params else None
                return server.messages(server.modern(method, dict(params, _meta=TASKS_META), headers=headers)[2])[-1]
            created = ask("tools/call", {"name": "jobs__failing_job", "arguments": {}})["result"]
            self.assertEqual(created["resultType"], "task")
            self.assertTrue(wait_until(lambda: ask("tasks/get", {"taskId": created["taskId"]})["result"]["status"]
                                       == "completed", 15))
            done = ask("tasks/get", {"taskId": created["taskId"]})["result"]
            self.assertTrue(done["result"]["isError"])
            self.assertIn("failing_job failed on purpose", text_of(done["result"]))


# Checks of the suite's tasks-* scenarios that need a task to ask for input while it runs (the
# `confirm_delete` and `multi_input` fixtures park their task in input_required): a command cannot
# ask anything once it runs, so no command tool serves those fixtures.
TASKS_KNOWN = {
    "sep-2663-tasks-get-status-input-required": "needs a task that asks for input while it runs",
    "tasks-mrtr-tasks-update-resumes": "needs a task that asks for input while it runs",
    "tasks-mrtr-partial-fulfillment": "needs a task that asks for input (twice) while it runs",
}


@unittest.skipUnless(CONFORMANCE and os.path.exists(CONFORMANCE) and NODE22 and os.path.exists(NODE22),
                     "the MCP conformance suite is not installed (set MCPSTUDIO_CONFORMANCE and MCPSTUDIO_NODE22)")
class TasksConformanceTests(ScratchDir):
    """The suite's tasks-* scenarios (2026-07-28) against examples/configs/tasks.json over HTTP."""

    def test_tasks_scenarios(self):
        scenarios = ["tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields",
                     "tasks-request-state-removal", "tasks-mrtr-input", "tasks-request-headers",
                     "tasks-dispatch-and-envelope", "tasks-status-notifications", "tasks-required-task-error",
                     "tasks-mrtr-composition"]
        listed = subprocess.run([NODE22, CONFORMANCE, "list"], capture_output=True, text=True, timeout=60,
                                stdin=subprocess.DEVNULL).stdout
        self.assertEqual(sorted(re.findall(r"- (tasks-[a-z-]+)", listed)), sorted(scenarios))  # none added unseen
        passed = []
        with HttpServerProcess("serve", "--config", TASKS_CONFIG) as server:
            url = "http://127.0.0.1:%d/mcp" % server.port
            for scenario in scenarios:
                with self.subTest(scenario=scenario):
                    out = os.path.join(self.dir, scenario)
                    proc = subprocess.run([NODE22, CONFORMANCE, "server", "--url", url, "--scenario", scenario,
                                           "-o", out], capture_output=True, text=True, timeout=180,
                                          stdin=subprocess.DEVNULL)
                    found = [os.path.join(root, name) for root, _, names in os.walk(out)
                             for name in names if name == "checks.json"]
                    self.assertEqual(len(found), 1, proc.stdout[-2000:] + proc.stderr[-2000:])
                    with open(found[0]) as f:
                        checks = json.load(f)
                    failed = [(c["id"], c.get("errorMessage")) for c in checks
                              if c["status"] == "FAILURE" and c["id"] not in TASKS_KNOWN]
                    self.assertEqual(failed, [])
                    passed.extend(c["id"] for c in checks if c["status"] == "SUCCESS")
        self.assertGreaterEqual(len(passed), 40)


# The official TypeScript SDK's client (experimental tasks, the 2025-11-25 flavour) against one
# mcpstudio: a task streamed to its result, then get, result, list, and a cancel.
TS_TASKS_CLIENT = """
const sdk = process.env.SDK_DIR + '/dist/esm/';
const { Client } = await import(sdk + 'client/index.js');
const { StdioClientTransport } = await import(sdk + 'client/stdio.js');
const { StreamableHTTPClientTransport } = await import(sdk + 'client/streamableHttp.js');
const { CallToolResultSchema } = await import(sdk + 'types.js');
const target = JSON.parse(process.env.TARGET);
const client = new Client({ name: 'tasks-test', version: '1.0.0' });
await client.connect(target.url ? new StreamableHTTPClientTransport(new URL(target.url))
                                : new StdioClientTransport({ command: target.command, args: target.args }));
const tasks = client.experimental.tasks;
const out = { tools: (await client.listTools()).tools.map(t => [t.name, t.execution?.taskSupport ?? null]) };
out.stream = [];
for await (const m of tasks.callToolStream({ name: 'slow_compute', arguments: { seconds: 1, label: 'ts' } },
                                           CallToolResultSchema, { task: { ttl: 60000 } })) {
  out.stream.push(m.type === 'result' ? ['result', m.result.content[0].text]
                  : m.type === 'error' ? ['error', m.error.message] : [m.type, m.task.status, m.task.taskId]);
}
const id = out.stream[0][2];
out.get = (await tasks.getTask(id)).status;
out.result = (await tasks.getTaskResult(id, CallToolResultSchema)).content[0].text;
const stream = tasks.callToolStream({ name: 'slow_compute', arguments: { seconds: 60, label: 'cancel-me' } },
                                    CallToolResultSchema, { task: { ttl: 60000 } });
const long = (await stream.next()).value.task.taskId;
await stream.return();
out.list = (await tasks.listTasks()).tasks.map(t => [t.taskId === id ? 'first' : t.taskId === long ? 'long' : t.taskId, t.status]);
out.cancel = (await tasks.cancelTask(long)).status;
out.after = (await tasks.getTask(long)).status;
console.log(JSON.stringify(out));
await client.close();
"""


@unittest.skipUnless(INSPECTOR and os.path.exists(INSPECTOR), "the MCP Inspector (and the TypeScript SDK beside it) is "
                                                               "not installed (set MCPSTUDIO_INSPECTOR)")
class TypeScriptTasksTests(ScratchDir):
    """The TypeScript SDK client's experimental tasks over stdio and HTTP; a cancel leaves no process."""

    def drive(self, target) -> dict:
        sdk = os.path.join(os.path.dirname(os.path.dirname(INSPECTOR)), "@modelcontextprotocol", "sdk")
        proc = subprocess.run(["node", "--input-type=module", "-e", TS_TASKS_CLIENT], capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL,
                              env=dict(os.environ, SDK_DIR=sdk, TARGET=json.dumps(target)))
        self.assertEqual(proc.returncode, 0, proc.stdout[-2000:] + proc.stderr[-3000:])
        return json.loads(proc.stdout.strip().splitlines()[-1])

    def check(self, out):
        self.assertIn(["slow_compute", "optional"], out["tools"])
        self.assertIn(["failing_job", "required"], out["tools"])
        kinds = [event[0] for event in out["stream"]]
        self.assertEqual((kinds[0], kinds[-1]), ("taskCreated", "result"), out["stream"])
        self.assertIn(["taskStatus", "completed", out["stream"][0][2]], out["stream"])
        self.assertEqual(out["stream"][-1][1], "computed after 1 s (ts)\n")
        self.assertEqual((out["get"], out["result"]), ("completed", "computed after 1 s (ts)\n"))
        self.assertEqual(out["list"], [["first", "completed"], ["long", "working"]])
        self.assertEqual((out["cancel"], out["after"]), ("cancelled", "cancelled"))
        if sys.platform.startswith("linux"):
            self.assertTrue(wait_until(lambda: not processes_with("cancel-me")), processes_with("cancel-me"))

    def test_over_stdio(self):
        self.check(self.drive({"command": SERVER[0], "args": SERVER[1:] + ["serve", "--config", TASKS_CONFIG]}))

    def test_over_http(self):
        with HttpServerProcess("serve", "--config", TASKS_CONFIG) as server:
            self.check(self.drive({"url": "http://127.0.0.1:%d/mcp" % server.port}))


def cpu_seconds() -> float:
    """CPU seconds of this process and every child it (and they) reaped: what a test cost the machine."""
    import resource
    return sum(usage.ru_utime + usage.ru_stime
               for usage in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)))


class TimedSuite(unittest.TestSuite):
    """The suite with MCPSTUDIO_DURATIONS=N set: it ends by printing its N slowest tests, and
    its N slowest classes with their setUpClass/tearDownClass, to stderr (.ci/run sets it).
    Each shows wall seconds and CPU seconds (servers included): a test slow in wall time but not
    in CPU waits on something; one heavy in CPU slows every suite beside it."""

    def __init__(self, tests, count):
        super().__init__(tests)
        self.count = count
        self.tests = {}  # id: [wall, cpu]
        self.classes = collections.defaultdict(lambda: [0.0, 0.0])

    def run(self, result, debug=False):
        start_test, stop_test = result.startTest, result.stopTest
        marks = {"stopped": (time.monotonic(), cpu_seconds())}

        def add(totals, since):
            totals[0] += time.monotonic() - since[0]
            totals[1] += cpu_seconds() - since[1]

        def started(test):
            add(self.classes[test.__class__.__name__], marks["stopped"])  # the next class's fixtures
            marks["started"] = (time.monotonic(), cpu_seconds())
            start_test(test)

        def stopped(test):
            stop_test(test)
            self.tests[test.id()] = [0.0, 0.0]
            add(self.tests[test.id()], marks["started"])
            add(self.classes[test.__class__.__name__], marks["started"])
            marks["stopped"] = (time.monotonic(), cpu_seconds())

        result.startTest, result.stopTest = started, stopped
        try:
            return super().run(result, debug)
        finally:
            result.startTest, result.stopTest = start_test, stop_test
            self.report(sys.stderr)

    def report(self, stream):
        for kind, times in (("tests", self.tests), ("classes", self.classes)):
            slowest = sorted(times.items(), key=lambda item: -item[1][0])[:self.count]
            stream.write("\nslowest %d %s (wall s, CPU s; set-up and tear-down included):\n" % (len(slowest), kind))
            stream.writelines("%8.2f s %8.2f cpu  %s%s\n" % (wall, cpu, "class " if kind == "classes" else "", name)
                              for name, (wall, cpu) in slowest)
        wall, cpu = (sum(column) for column in zip(*self.classes.values()))
        stream.write("total %.1f s, %.1f CPU s over %d tests\n" % (wall, cpu, len(self.tests)))


class SharedSuite(unittest.TestSuite):
    """The suite with MCPSTUDIO_SHARD_DIR set: runs of one Python started side by side with the same
    folder share out the tests, each test running in the first run to claim it (an os.mkdir in the
    folder, atomic). A run that finishes a test claims the next one left, so no run idles while
    another holds a long queue (.ci/run runs each Python's suite so). The longest classes go first,
    that no run starts one when the others are done."""

    FIRST = ("ConformanceClientTests", "ConformanceTests", "RealUpstreamTests", "TasksConformanceTests",
             "ClaudeCodeInteropTests", "ConformanceThroughTests", "ToolingTests", "AggregatorTests", "ConfigTests",
             "AggregatorReliabilityTests", "FaultTests", "ScriptModeTests", "ExampleTests", "ProtocolTests",
             "OAuthTests", "LoadTests", "HttpTests", "FuzzTests")  # by a CI run's time, the interop classes first
    _cleanup = False  # TestSuite.run would drop its tests by the index of this suite's own iteration

    def __init__(self, tests, folder):
        flat = [test for suite in tests for test in suite]
        super().__init__(sorted(flat, key=self.rank))  # (sorted keeps the file's order within a rank)
        self.folder = folder

    def rank(self, test) -> int:
        name = test.__class__.__name__
        return self.FIRST.index(name) if name in self.FIRST else len(self.FIRST)

    def countTestCases(self) -> int:  # (all of them, claiming none)
        return len(self._tests)

    def __iter__(self):
        for test in self._tests:
            try:
                os.mkdir(os.path.join(self.folder, test.id()))
            except FileExistsError:
                continue  # another run has it
            yield test


def load_tests(loader, tests, pattern):
    """unittest's hook: with MCPSTUDIO_SHARD_DIR set, the runs given that folder share out the test
    classes (SharedSuite); with MCPSTUDIO_DURATIONS=N, the slowest N tests are printed at the end
    (TimedSuite)."""
    folder = os.environ.get("MCPSTUDIO_SHARD_DIR")
    if folder:
        tests = SharedSuite(tests, folder)
    count = int(os.environ.get("MCPSTUDIO_DURATIONS") or 0)
    return TimedSuite([tests], count) if count else tests


# --------------------------------------------------------------------------
# The conformance suite's client scenarios (issue 19): this file is the adapter
# --------------------------------------------------------------------------
# `conformance client --command "python3 test_mcpstudio.py --conformance-client"` runs
# the adapter with the scenario's URL last; it maps the scenario to `mcpstudio inspect`
# and `mcpstudio call` as a user would type them, with $BROWSER set to `--test-browser`,
# which follows the authorization server's redirect to mcpstudio's loopback callback.

CIMD_URL = "https://conformance-test.local/client-metadata.json"  # the suite's Client ID Metadata Document
# The adapter as ConformanceClientTests runs it: this file imported from its cached bytecode (run as
# a script, its 11,000 lines would be compiled again for each of the ~60 scenarios and sign-ins).
ADAPTER = ("import sys; sys.path.insert(0, %r); sys.mcpstudio_test_child = True; import test_mcpstudio as t; "
           "sys.exit(t.follow_sign_in(sys.argv[2]) if sys.argv[1] == '--test-browser' "
           "else t.conformance_client(sys.argv[-1]))\n" % HERE)


def follow_sign_in(url: str) -> int:
    """A browser for tests: open the authorization URL, follow its redirect to the callback. With
    MCPSTUDIO_TEST_BROWSER_ATTACK set, first an idle connection to the callback and a forged redirect."""
    import socket
    import urllib.error
    import urllib.parse
    import urllib.request
    if os.environ.get("MCPSTUDIO_TEST_BROWSER_ATTACK"):
        callback = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))["redirect_uri"]
        idle = socket.create_connection((urllib.parse.urlsplit(callback).hostname, urllib.parse.urlsplit(callback).port))
        try:
            urllib.request.urlopen(callback + "?code=forged&state=forged", timeout=20).read()
        except urllib.error.HTTPError:
            pass  # refused: the real redirect still counts

    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None
    try:
        urllib.request.build_opener(Stay).open(url, timeout=60).read()  # a loaded CI machine: a browser waits too
        return 1  # no redirect: nothing to follow
    except urllib.error.HTTPError as exc:
        location = exc.headers.get("Location")
        if not location:
            return 1
    urllib.request.urlopen(location, timeout=60).read()
    if os.environ.get("MCPSTUDIO_TEST_BROWSER_ATTACK"):
        idle.close()
    return 0


def conformance_client(url: str) -> int:
    """One client scenario: the mcpstudio commands a user would run against `url`."""
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    work = tempfile.mkdtemp(prefix="mcpstudio-conformance-")
    atexit.register(shutil.rmtree, work, ignore_errors=True)  # one folder a scenario was left in /tmp
    env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(work, "config"), XDG_CACHE_HOME=os.path.join(work, "cache"),
               BROWSER="%s %s --test-browser %%s" % (sys.executable, os.path.abspath(sys.argv[0])))
    mcpstudio = SERVER  # as the installed command runs: from cached bytecode
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")  # the revision the scenario is run at
    mode = ["--url", url] + (["--protocol-version", version] if version else [])
    if scenario in ("auth/basic-cimd", "auth/pre-registration"):  # the config's `oauth` block: its own client id
        oauth = {"browser": True, "clientMetadataUrl": CIMD_URL}
        if context.get("client_id"):
            oauth.update(clientId=context["client_id"], clientSecret=context.get("client_secret", ""))
        config = os.path.join(work, "servers.json")
        entry = {"url": url, "prefix": "", "oauth": oauth}
        if version:
            entry["protocolVersion"] = version
        with open(config, "w") as f:
            json.dump({"mcpServers": {"remote": entry}}, f)
        mode = ["serve", "--config", config, "--no-manager-tools"]

    def run(*words):
        return subprocess.run(mcpstudio + list(words), env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, text=True).stdout

    if scenario.startswith("auth/"):
        return subprocess.run(mcpstudio + ["call", "test-tool"] + mode, env=env, stdin=subprocess.DEVNULL).returncode
    listing = json.loads(run("inspect", "--json", *mode) or "{}")
    tools = [tool["name"] for tool in listing.get("tools", [])]
    if context.get("toolCalls"):  # the calls the scenario asks for
        return max(subprocess.run(mcpstudio + ["call", call["name"], "--json", json.dumps(call["arguments"])] + mode,
                                  env=env, stdin=subprocess.DEVNULL).returncode for call in context["toolCalls"])
    if scenario in ("json-schema-ref-no-deref", "request-metadata") or not tools:
        return 0 if listing else 1
    if scenario in ("sep-2322-client-request-state", "http-invalid-tool-headers"):  # each tool, answering yes
        return max(subprocess.run(mcpstudio + ["call", name, "--yes"] + mode, env=env,
                                  stdin=subprocess.DEVNULL).returncode for name in tools)
    if scenario == "json-schema-2020-12-preservation":
        focal = next(t for t in listing["tools"] if t["name"] == "json_schema_2020_12_tool")
        return subprocess.run(mcpstudio + ["call", "json_schema_echo", "--json", json.dumps({"schema": focal["inputSchema"]})]
                              + mode, env=env, stdin=subprocess.DEVNULL).returncode
    return subprocess.run(mcpstudio + ["call", tools[0], "a=2", "b=3", "--yes"] + mode, env=env,
                          stdin=subprocess.DEVNULL).returncode


if __name__ == "__main__" and sys.argv[1:2] == ["--test-browser"]:
    sys.exit(follow_sign_in(sys.argv[2]))
if __name__ == "__main__" and sys.argv[1:2] == ["--conformance-client"]:
    sys.exit(conformance_client(sys.argv[-1]))
if __name__ == "__main__":
    unittest.main()
