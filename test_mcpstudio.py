"""Tests for mcpstudio: `python3 -m unittest -v`.

Most tests drive the real program the way a client does: they spawn
`mcpstudio.py` as a subprocess, speak JSON-RPC over its stdin/stdout, and
check the replies and the processes left behind. Pure parts (template
parser, schema validator, naming) get direct, table-driven tests.

Interop tests use real peers (the official MCP Python SDK, the MCP Inspector
CLI) when they are installed, and skip cleanly when they are not. `.ci/run`
installs them and points MCPSTUDIO_SDK_PYTHON / MCPSTUDIO_INSPECTOR at them.
"""

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
WAIT = 15.0  # the longest any single wait in these tests may take


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
        self.argv = cmd or [PY, MODULE] + list(args)
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr, env=env, cwd=cwd)
        self.lock = threading.Condition()
        self.responses = {}
        self.notifications = []
        self.stdout_lines = []   # every raw line the server wrote to stdout
        self.stderr = []
        self.next_id = 100
        threading.Thread(target=self._read_stdout, daemon=True).start()
        if self.proc.stderr is not None:
            threading.Thread(target=self._read_stderr, daemon=True).start()

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

    def initialize(self, version="2025-11-25"):
        reply = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                            "clientInfo": {"name": "test", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def call(self, name, arguments, timeout=WAIT, meta=None, request_id=None):
        params = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        return self.request("tools/call", params, timeout, request_id)["result"]

    def notifications_of(self, method):
        with self.lock:
            return [n for n in self.notifications if n["method"] == method]

    def close(self, timeout=WAIT) -> int:
        """Close stdin (how clients stop a server) and wait for the exit code."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        return self.proc.wait(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
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
        args = template.normalize({"my-var": "x", "dry-run": True})
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


class LazySectionTests(unittest.TestCase):
    def test_sections_keep_real_line_numbers(self):
        # Code compiled on first use reports this file's lines, so tracebacks and inspect work.
        import inspect
        with open(MODULE) as f:
            lines = f.read().split("\n")
        for obj, text in ((mcpstudio.ConfigLoader.load, "    def load(self, runner"),
                          (mcpstudio.ScriptDirectory.rescan, "    async def rescan(self"),
                          (mcpstudio.CommandTemplate.render_shell, "    def render_shell(self")):
            with self.subTest(obj=obj.__qualname__):
                line = obj.__code__.co_firstlineno
                self.assertTrue(lines[line - 1].startswith(text), lines[line - 1])
                self.assertEqual(obj.__code__.co_filename, mcpstudio.__file__)
                self.assertTrue(inspect.getsource(obj).startswith(text))

    def test_sections_compile_once_under_threads(self):
        # Many threads asking for section names at once all get them (the loader holds a lock).
        code = ("import threading, mcpstudio\n"
                "errors = []\n"
                "def touch():\n"
                "    try:\n"
                "        mcpstudio.ConfigLoader; mcpstudio.ScriptDirectory; mcpstudio.Aggregator; mcpstudio.HttpServer\n"
                "    except Exception as exc:\n"
                "        errors.append(repr(exc))\n"
                "threads = [threading.Thread(target=touch) for _ in range(8)]\n"
                "[t.start() for t in threads]; [t.join() for t in threads]\n"
                "print(errors, sorted(mcpstudio._SECTIONS))")
        out = subprocess.run([PY, "-c", code], cwd=HERE, capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(out.stdout.strip(), "[] []", out.stderr)

    def test_zipapp_compiles_sections(self):
        # From a zipapp, the config and script sections compile and serve (source read by the zip loader).
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

    def test_template_mode_compiles_no_section(self):
        # Serving a template never compiles the script or config sections.
        code = ("import mcpstudio, sys; log = mcpstudio.Log(); "
                "opts, words = mcpstudio.parse_command_line(['echo', '{m}']); "
                "mcpstudio._build_server(opts, words, log); print(sorted(mcpstudio._SECTIONS))")
        out = subprocess.run([PY, "-c", code], cwd=HERE, capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(out.stdout.strip(), "['aggregator', 'config', 'http', 'modern', 'scripts']", out.stderr)


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
            self.assertEqual(init["capabilities"], {"tools": {"listChanged": False}, "logging": {}})
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
            started = time.monotonic()
            reply = server.request("server/discover", {}, timeout=2, request_id=0)
            self.assertLess(time.monotonic() - started, 1.5)
            self.assertEqual(reply["error"]["code"], -32602)
            self.assertEqual(server.request("nothing/here")["error"]["code"], -32601)
            server.initialize()
            self.assertEqual(server.request("resources/list")["error"]["code"], -32601)
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
                null_errors = [json.loads(l)["error"]["code"] for l in server.stdout_lines
                               if json.loads(l).get("id", 0) is None]
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
        with McpProcess("--timeout", "1", "--name", "s", PY, sleeper, "{out}") as server:
            server.initialize()
            started = time.monotonic()
            result = server.call("s", {"out": pids})
            self.assertLess(time.monotonic() - started, 1 + mcpstudio.KILL_GRACE + 2)
            self.assertTrue(result["isError"])
            self.assertIn("timed out after 1 s", text_of(result))
            for pid in self.read_pids(pids):
                self.assertTrue(wait_until(lambda: not alive(pid), 5), "pid %d outlived the timeout" % pid)

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
            self.assertTrue(wait_until(lambda: not alive(child) and not alive(grandchild), 5))
            self.assertEqual(server.request("ping")["result"], {})  # still serving
            time.sleep(0.2)
            self.assertNotIn(42, server.responses)
            # Cancelling an unknown id is ignored.
            server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}})
            self.assertEqual(server.request("ping")["result"], {})

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
            self.assertTrue(any("running: echo loud" in l["data"] and l["level"] == "debug" for l in logs), logs)
            self.assertEqual(server.request("logging/setLevel", {"level": "chatty"})["error"]["code"], -32602)

    def test_concurrent_calls(self):
        # 16 calls of a 0.2 s command finish together, not one after another.
        with McpProcess("--name", "s", "sleep", "{seconds}") as server:
            server.initialize()
            started = time.monotonic()
            for i in range(16):
                server.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                             "params": {"name": "s", "arguments": {"seconds": "0.2"}}})
            for i in range(16):
                self.assertFalse(server.wait_response(i)["result"]["isError"])
            self.assertLess(time.monotonic() - started, 1.5)

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
            self.assertEqual(len(result["content"][0]["text"]), 4000000)
            self.assertEqual(result["content"][1]["text"], "[stderr]\n" + "e" * 4000000)

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
            self.assertIn("null", text_of(result))

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
            self.assertTrue(any("debug" in l for l in server.stderr))

    def test_log_file_masks_secrets(self):
        # --log records every protocol message in and out; --env values are masked, also
        # non-ASCII ones and ones JSON escapes; values under 4 characters are left alone.
        log = os.path.join(self.dir, "wire.log")
        with McpProcess("--log", log, "--env", "TOKEN=s3cr3t-value", "--env", "OTHER=pässwörd\"x",
                        "--env", "ONE=1", "--name", "t",
                        PY, "-c", "import os; print(os.environ['TOKEN'], os.environ['OTHER'])", "[x]") as server:
            server.initialize()
            self.assertEqual(text_of(server.call("t", {})), 's3cr3t-value pässwörd"x\n')
            self.assertEqual(server.close(), 0)
        with open(log, encoding="utf-8") as f:
            content = f.read()
        self.assertIn('"method":"initialize"', content.replace(" ", ""))
        self.assertIn("tools/call", content)
        self.assertIn("<-", content)
        for leak in ("s3cr3t-value", "pässwörd", "p\\u00e4ss"):
            self.assertNotIn(leak, content)
        self.assertIn("*** ***", content)
        self.assertIn("2025-11-25", content)  # ONE=1 did not mangle the log

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
                self.assertTrue(wait_until(lambda: not alive(pid), 5), "pid %d outlived the server" % pid)

    def test_eof_lets_quick_calls_finish(self):
        # Requests piped in before EOF are still answered (e.g. `printf ... | mcpstudio`).
        msgs = [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "piped"}}},
        ]
        proc = subprocess.run([PY, MODULE, "echo", "{message}"], input="".join(json.dumps(m) + "\n" for m in msgs),
                              capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        replies = {json.loads(l)["id"]: json.loads(l) for l in proc.stdout.splitlines()}
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
                        self.assertTrue(wait_until(lambda: not alive(pid), 5), "pid %d outlived the server" % pid)

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
                        self.assertTrue(wait_until(lambda: not alive(pid), 5), "pid %d outlived the server" % pid)


class CommandLineTests(ScratchDir):
    def run_cli(self, *args):
        return subprocess.run([PY, MODULE] + list(args), capture_output=True, text=True, timeout=WAIT, stdin=subprocess.DEVNULL)

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
        self.assertEqual(tool["name"], "git_status")
        self.assertEqual(tool["description"], "Run `git-status [--short]`.")
        _, tool = self._tool("--max-name-length", "16", "--name", "a_very_long_tool_name", "echo")
        self.assertEqual(len(tool["name"]), 16)
        self.assertRegex(tool["name"], r"^a_very_lo_[0-9a-f]{6}$")

    def test_zipapp(self):
        # The documented zipapp recipe builds a .pyz that serves the echo tool.
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
            self.assertLess(time.monotonic() - started, 1.5, "initialize waited for discovery")
            names = self.tool_names(server)
            self.assertEqual(names, ["deep__er__tool", "good", "math__add"])
            tools = {t["name"]: t for t in server.request("tools/list")["result"]["tools"]}
            self.assertEqual(tools["good"]["title"], "Good one (good)")
            self.assertEqual(tools["good"]["description"], "works")
            self.assertEqual(tools["math__add"]["title"], "math/add")
            stderr_text = "".join(server.stderr)
            for name, fragment in (("broken", "exited with code 1"), ("slow", "timed out"),
                                   ("badjson", "invalid metadata"), ("badopts", "invalid options"),
                                   ("nodefault", "no default_value"), ("wrongdefault", "integer"),
                                   ("emptyenum", "non-empty")):
                lines = [l for l in server.stderr if os.path.join(self.root, name) + " left out" in l]
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
        proc = subprocess.run([PY, MODULE, "--root-directory", self.root, "--separator", "."],
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
            self.assertEqual(len(result["content"][0]["text"]), 1000000)

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
            self.assertTrue(wait_until(lambda: changes() >= 1, 5), server.context())
            self.assertEqual(len(server.notifications_of("notifications/resources/list_changed")), 1)
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
            self.assertTrue(wait_until(lambda: server.notifications_of("notifications/tools/list_changed"), 5))
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
            self.assertTrue(any("broken" in l and "left out" in l for l in server.stderr))
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
        self.make("slow", {}, help_sleep=1.5)
        with self.serve("--help-timeout", "0.5") as server:
            server.initialize()
            self.assertEqual(self.tool_names(server), [])
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
            stderr = "".join(server.stderr)
            self.assertIn("badsize left out", stderr)
            self.assertIn("badname left out", stderr)

    def test_missing_root(self):
        # A root that does not exist is a usage error naming it.
        proc = subprocess.run([PY, MODULE, "--root-directory", os.path.join(self.dir, "nope")],
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
        # jq filters and JSON keep their brackets: only {field} is a field inside quotes and in stdin.
        self.assertEqual(self.render("jq '.items[{i}]'", {"i": "2"}), ["jq", ".items[2]"])
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
        return subprocess.run([PY, MODULE] + list(args), capture_output=True, text=True, timeout=WAIT,
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
        for data, fragments in cases:
            with self.subTest(data=data):
                path = self.write_config(data)
                for args in (["serve", "--config", path], ["check", "--config", path]):
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
                            servers[words[3]] = {"command": words[5], "args": words[6:]}
            for key, entry in servers.items():
                args = [a.replace("${workspaceFolder}", HERE).replace("/path/to/mcpstudio/", HERE + "/")
                        for a in entry["args"]]
                self.assertTrue(args[0].endswith("mcpstudio.py"), (name, key))
                found.append((name, key, args[1:]))
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
        # Every config in examples/configs is valid and `check` shows its tools.
        folder = os.path.join(HERE, "examples", "configs")
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
        self.assertGreaterEqual(len(names), 3)
        for name in names:
            with self.subTest(config=name):
                proc = subprocess.run([PY, MODULE, "check", "--config", os.path.join(folder, name)],
                                      capture_output=True, text=True, timeout=WAIT)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn("tools:", proc.stdout)

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
            # A pattern may start with '-' (it sits inside --regexp=...); a file may not, even after --.
            self.assertEqual(int(text_of(server.call("count_matches", {"pattern": "--q9-not-in-module", "file": MODULE}))), 0)
            self.assertIn("starts with '-'", text_of(server.call("count_matches", {"pattern": "x", "file": "--help"})))

    def test_readme_config_example(self):
        # The config shown in the README loads, and `check` accepts it.
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        block = readme.split("```jsonc\n", 1)[1].split("```", 1)[0]
        with tempfile.TemporaryDirectory() as folder:
            os.mkdir(os.path.join(folder, "scripts"))
            path = os.path.join(folder, "tools.json")
            with open(path, "w") as f:
                f.write(block)
            proc = subprocess.run([PY, MODULE, "check", "--config", path], capture_output=True, text=True,
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

FAKE_SERVER = r"""'''A small MCP server over stdio for mcpstudio's aggregator tests; its behaviour comes from argv.'''
import json
import os
import subprocess
import sys
import threading
import time

args = sys.argv[1:]


def opt(name, default=None):
    return args[args.index(name) + 1] if name in args else default


if "--crash-at-start" in args or os.environ.get("FAKE_CRASH_AT_START"):
    sys.stderr.write("fake: cannot start: missing API key\n")
    sys.exit(3)
if opt("--slow-start"):
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
ONLY = opt("--only") or os.environ.get("FAKE_ONLY")
if ONLY:
    TOOLS = [t for t in TOOLS if t["name"] in ONLY.split(",")]
stalled = []
cancelled = set()


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
    if name == "crash":
        sys.stderr.write("fake: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(7)
    if name == "env":
        return {"content": [{"type": "text", "text": os.environ.get(arguments.get("name", ""), "<unset>")}]}
    return {"content": [{"type": "text", "text": "%s called" % name}]}


MODERN = "--modern-only" in args  # a server of the 2026-07-28 era: no initialize, _meta on every request


def handle(message):
    method, request_id = message.get("method"), message.get("id")
    params = message.get("params") or {}
    if MODERN and request_id is not None:
        meta = params.get("_meta") or {}
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no initialize here"}})
            return
        if meta.get("io.modelcontextprotocol/protocolVersion") != "2026-07-28":
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": "_meta missing"}})
            return
        if method == "server/discover":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "resultType": "complete", "supportedVersions": ["2026-07-28"], "ttlMs": 0, "cacheScope": "public",
                "capabilities": {"tools": {}}, "_meta": {"io.modelcontextprotocol/serverInfo": {"name": NAME, "version": "2"}}}})
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
                  "capabilities": {"tools": {"listChanged": True}, "resources": {}, "prompts": {}, "logging": {}}}
        if "--no-tools" in args:
            del result["capabilities"]["tools"]
    elif method == "ping":
        result = {}
    elif method == "tools/list" and "--no-tools" in args:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no tools here"}})
        return
    elif method == "tools/list":
        start = int(params.get("cursor") or 0)
        result = {"tools": TOOLS[start:start + 50]}
        if start + 50 < len(TOOLS):
            result["nextCursor"] = str(start + 50)
    elif method == "tools/call":
        result = call(request_id, params)
        if result is None:
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
    if message.get("method") == "tools/call" and message["params"]["name"] == "sleep":
        threading.Thread(target=handle, args=(message,), daemon=True).start()
    else:
        handle(message)
if "--ignore-eof" in args:  # a server that does not exit when its stdin closes
    time.sleep(60)
"""
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
        mcpstudio._need("aggregator")
        for namespaces, requested, default, chosen, fragment in cases:
            with self.subTest(requested=requested, default=default, namespaces=sorted(namespaces)):
                name, how, error = mcpstudio.select_namespace(namespaces, requested, default)
                self.assertEqual(name, chosen)
                self.assertIn(fragment, error if error else how)
                self.assertTrue((error is None) != (how is None))


class AggregatorTests(ScratchDir):
    def setUp(self):
        super().setUp()
        self.fake = self.script("fake_mcp.py", FAKE_SERVER, executable=False)
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
        self.env.pop("FAKE_ONLY", None)
        self.pids = os.path.join(self.dir, "pids")

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
        """Run once so the tools are cached; then forget which servers started."""
        with self.serve(data) as server:
            server.initialize()
            self.assertIn(expected, self.tool_names(server))
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
            self.assertEqual(set(init["capabilities"]), {"tools", "resources", "prompts", "logging"})
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
            server.initialize()
            self.assertEqual(self.started(), [])  # initialize starts nothing
            names = self.tool_names(server)  # no cache yet: the listing starts both
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
            # maxConcurrency 1: two calls of 0.5 s run one after the other; without it, together.
            for name, least, most in (("one__sleep", 0.95, 5), ("a__sleep", 0.45, 0.95)):
                server.call(name, {"seconds": 0.01})  # started
                started = time.monotonic()
                for i in (1, 2):
                    server.send({"jsonrpc": "2.0", "id": "%s%d" % (name, i), "method": "tools/call",
                                 "params": {"name": name, "arguments": {"seconds": 0.5}}})
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
            names = self.tool_names(server)  # the healthy ones, within the listing wait
            self.assertIn("good__echo", names)
            self.assertIn("slow__echo", names)
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
            self.assertIn("server `a` exited with code 7", text_of(result))
            self.assertIn("crashing on purpose", text_of(result))
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
        data = {"mcpServers": {"big": self.upstream("big", "--tools", "2000")}}
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
            self.assertIn("namespace work (--namespace work); servers: a, b", "".join(server.stderr))
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
                    self.assertTrue(wait_until(lambda: fragment in "".join(server.stderr)))
        with self.serve(dict(data, defaultNamespace="home")) as server:
            server.initialize()
            self.assertEqual(sorted({n.split("__")[0] for n in self.tool_names(server)}), ["c", "mcpstudio"])
        self.assertEqual(len(self.started()), 3)  # a, b, then c: each namespace started only its own

    def test_reload(self):
        data = {"mcpServers": {"a": self.upstream("a"), "b": self.upstream("b")}}
        path = self.write(data)
        with McpProcess("serve", "--config", path, "--rescan", "0.2", env=self.env) as server:
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
            # The file watcher notices a change on its own: a is removed and stopped.
            del data["mcpServers"]["a"]
            self.write(data)
            self.assertTrue(wait_until(lambda: not alive(a_pid)), "the watcher did not reload")
            self.assertTrue(wait_until(lambda: "a__echo" not in self.tool_names(server)))
            # SIGHUP reloads too (and does not stop the server).
            data["mcpServers"]["d"] = self.upstream("d")
            with open(path, "w") as f:
                json.dump(data, f)
            server.proc.send_signal(signal.SIGHUP)
            self.assertTrue(wait_until(lambda: "d__echo" in self.tool_names(server)))
            self.assertIsNone(server.proc.poll())
            # Names listed before a reload that removed their server: -32000 or an isError, never the old one.
            uris = [r["uri"] for r in server.request("resources/list")["result"]["resources"]]
            self.assertIn("fake://d/info", uris)
            del data["mcpServers"]["d"]
            self.write(data)
            server.call("mcpstudio__config_reload", {})
            result = server.call("d__echo", {"text": "x"})
            self.assertTrue(result["isError"])
            self.assertIn("server `d` is no longer configured", text_of(result))
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
        run = lambda *args: subprocess.run([PY, MODULE, "status", "--config", path] + list(args), env=env,
                                           capture_output=True, text=True, timeout=60)
        proc = run()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("namespace: all (the only namespace in the config)", proc.stdout)
        self.assertRegex(proc.stdout, r"\na +- \(not cached yet\) +\S+ .*--token \*\*\*")
        self.assertNotIn("status-secret-789", proc.stdout + proc.stderr)
        proc = run("--check")
        self.assertEqual(proc.returncode, 1, proc.stdout)
        self.assertRegex(proc.stdout, r"\na +ok, 5 tools, started in \d+ ms")
        self.assertRegex(proc.stdout, r"\nbad +failed: .*exited with code 3.*missing API key")
        proc = run()
        self.assertRegex(proc.stdout, r"\na +5 \(cached \d{4}-\d\d-\d\d \d\d:\d\d\)")
        self.assert_all_gone()
        proc = subprocess.run([PY, MODULE, "check", "--config", path], env=env, capture_output=True, text=True,
                              timeout=60)
        self.assertIn("MCP servers", proc.stdout)
        self.assertIn("a ", proc.stdout)


# --------------------------------------------------------------------------
# Interop with real peers (installed by .ci/run; skipped when absent)
# --------------------------------------------------------------------------

SDK_PYTHON = os.environ.get("MCPSTUDIO_SDK_PYTHON", "")
INSPECTOR = os.environ.get("MCPSTUDIO_INSPECTOR", "")


def _sdk_available() -> bool:
    if not SDK_PYTHON or not os.path.exists(SDK_PYTHON):
        return False
    return subprocess.run([SDK_PYTHON, "-c", "import mcp"], capture_output=True).returncode == 0


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
                        servers = await session.call_tool("mcpstudio__servers_list", {})
                        print(json.dumps({
                            "capabilities": sorted(k for k, v in init.capabilities.model_dump().items() if v is not None),
                            "tools": [t.name for t in tools.tools],
                            "echo": echo.content[0].text, "sum": total.content[0].text,
                            "now": json.loads(now.content[0].text), "slow": slow.is_error, "steps": steps,
                            "resource": str(first.contents[0].uri), "prompts": [p.name for p in prompts.prompts],
                            "servers": [(s["id"], s["status"]) for s in servers.structured_content["servers"]],
                        }))
            anyio.run(main)
            """
        for run in ("cold", "cached"):  # the second run lists from the cache, starting nothing
            with self.subTest(run=run):
                out = self.run_client(code, CONFIG=config, XDG_CACHE_HOME=os.path.join(self.dir, "cache"))
                self.assertEqual(out["capabilities"], ["logging", "prompts", "resources", "tools"])
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


class HttpServerProcess(McpProcess):
    """mcpstudio --http 127.0.0.1:0 ...; `port` is read from its startup line on stderr."""

    def __init__(self, *args, env=None, bind="127.0.0.1:0"):
        super().__init__("--http", bind, *args, env=env)
        self.port = None
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
        connection.request(method, "/mcp", body=body, headers=sent)
        response = connection.getresponse()
        text = response.read().decode()
        connection.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, text

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
        proc = subprocess.run([PY, MODULE, "--http", "0.0.0.0:0", "echo", "{m}"], capture_output=True, text=True,
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


class LegacySseServer:
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
                self.wfile.write(b"event: endpoint\ndata: /messages?session=1\n\n")
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

        self.headers = []
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if cert:
            import ssl
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert[0], cert[1])
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.outbox.put(None)
        self.server.shutdown()
        self.server.server_close()


class ConnectProxy:
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

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
        fake = self.script("fake_mcp.py", FAKE_SERVER, executable=False)
        with self.aggregator({"new": {"command": PY, "args": [fake, "--name", "new", "--modern-only"]}}) as server:
            server.initialize()
            self.assertEqual(text_of(server.call("new__echo", {"text": "x"})), "new: x")
            status = server.call("mcpstudio__servers_list", {})["structuredContent"]["servers"][0]
            self.assertEqual(status["protocol"], "2026-07-28")

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
                                         "server-session-lifecycle", "server-sse-multiple-streams")] + \
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


if __name__ == "__main__":
    unittest.main()
