"""run_py: runs a Python snippet and returns the value of its last
expression with everything it printed.

This is the Python interpreter of toolhost's `run_code` tool. It is not a
Rust crate: componentize-py compiles it, with CPython and the parts of the
standard library it uses, into a component of the `tool-plugin` world
(`make plugins` does this; see the Makefile). Each run is a fresh instance,
so nothing a snippet does outlives its call.

The snippet gets nothing from outside: the host loads this component with
a policy that grants no directories, no network and no environment
variables, so `open`, `socket` and `os.environ` find nothing. Time and
memory are bounded by the host's sandbox, which stops the instance at its
deadline or its memory limit.
"""

import ast
import importlib
import json
import sys
import traceback

# The modules a snippet can import. componentize-py builds the component
# from a snapshot of this module once loaded, so what is imported here is
# bundled; a snippet has no filesystem to import anything else from. Pure
# computation only: none of these reaches outside the instance (and the
# sandbox grants nothing to reach).
BUNDLED = (
    "array base64 binascii bisect calendar cmath collections colorsys contextlib copy csv "
    "dataclasses datetime decimal difflib enum fnmatch fractions functools graphlib hashlib "
    "heapq html io ipaddress itertools json math numbers operator pprint random re shlex "
    "statistics string struct textwrap time typing unicodedata urllib.parse uuid zlib"
).split()
for _name in BUNDLED:
    importlib.import_module(_name)

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types

# Bytes of a snippet accepted.
MAX_CODE_BYTES = 1 << 20
# Bytes of printed text kept per run; later writes are counted, not kept.
MAX_CONSOLE_BYTES = 1 << 20
# Bytes of printed text the model sees, and repeated in an error message.
LLM_CONSOLE_BYTES = 8 << 10
MAX_ERROR_CONSOLE_BYTES = 4 << 10
# Bytes of the value the model sees, and the user sees.
LLM_VALUE_BYTES = 4 << 10
USER_VALUE_BYTES = 1 << 20
# Stack frames kept in an error message.
MAX_FRAMES = 10
# The name snippets see in tracebacks (`File "snippet.py", line 3`).
SOURCE_NAME = "snippet.py"

DESCRIPTION = (
    "Runs a Python 3 snippet and returns the value of its last expression and what it "
    "printed (stdout and stderr). It can import these standard-library modules: "
    + ", ".join(BUNDLED)
    + ". There is no filesystem, network, environment or subprocess. An uncaught exception "
    "or a syntax error fails the call with its traceback."
)

SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "Python source, run as a module. The value of its last "
                "expression is returned, with everything written to stdout and stderr.",
            }
        },
        "required": ["code"],
        "additionalProperties": False,
    }
)


class Console:
    """What print() and the standard streams wrote, in order, capped."""

    def __init__(self):
        self.lines = []  # (is_error, text), text without its newline
        self.kept = 0
        self.dropped = 0
        self.open = {False: "", True: ""}

    def write(self, is_error, text):
        pending = self.open[is_error] + text
        *whole, self.open[is_error] = pending.split("\n")
        for line in whole:
            self.push(is_error, line)
        return len(text)

    def push(self, is_error, line):
        size = len(line.encode("utf-8", "replace"))
        if self.kept + size > MAX_CONSOLE_BYTES:
            self.dropped += size
        else:
            self.kept += size
            self.lines.append((is_error, line))

    def finish(self):
        for is_error in (False, True):
            if self.open[is_error]:
                self.push(is_error, self.open[is_error])
                self.open[is_error] = ""

    def transcript(self):
        self.finish()
        text = "".join(("[error] " if err else "") + line + "\n" for err, line in self.lines)
        if self.dropped:
            text += f"[console output cut: {self.dropped} more bytes not kept]\n"
        return text


class Stream:
    """A text stream that writes into the console."""

    def __init__(self, console, is_error):
        self.console = console
        self.is_error = is_error

    def write(self, text):
        return self.console.write(self.is_error, str(text))

    def flush(self):
        pass

    def isatty(self):
        return False


def cut(text, limit):
    """`text` if it fits in `limit` bytes; otherwise its head and tail with a
    marker saying how many bytes were left out between them."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    head = data[: limit // 2].decode("utf-8", "ignore")
    tail = data[len(data) - limit // 2 :].decode("utf-8", "ignore")
    left_out = len(data) - len(head.encode()) - len(tail.encode())
    return f"{head}\n[… {left_out} bytes cut …]\n{tail}"


def describe(error):
    """The exception's type and message, then its innermost frames in the
    snippet, most recent call last, as Python prints them."""
    frames = [
        f for f in traceback.extract_tb(error.__traceback__) if f.filename == SOURCE_NAME
    ]
    lines = ["".join(traceback.format_exception_only(error)).rstrip("\n")]
    if frames:
        lines.append("Traceback (most recent call last):")
        if len(frames) > MAX_FRAMES:
            lines.append(f"  … {len(frames) - MAX_FRAMES} earlier frames")
            frames = frames[-MAX_FRAMES:]
        for f in frames:
            lines.append(f'  File "{SOURCE_NAME}", line {f.lineno}, in {f.name}')
    return "\n".join(lines)


def evaluate(code, console):
    """Runs `code`; the repr of its last expression's value (`None` when it
    ends with a statement). Raises whatever the snippet raised."""
    tree = ast.parse(code, SOURCE_NAME)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    scope = {"__name__": "__main__", "__builtins__": __builtins__}
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Stream(console, False), Stream(console, True)
    try:
        exec(compile(tree, SOURCE_NAME, "exec"), scope)
        value = eval(compile(last, SOURCE_NAME, "eval"), scope) if last else None
    finally:
        sys.stdout, sys.stderr = saved
    return repr(value)


def failed(message):
    return Err(types.ToolError_Failed(types.Failure(message=message, retryable=False)))


class Tool(exports.Tool):
    def list_tools(self):
        return [
            types.ToolDescriptor(
                name="run_py",
                description=DESCRIPTION,
                parameters_schema=SCHEMA,
                concurrency_safe=True,
                idempotent=True,
            )
        ]

    def call_tool(self, name, arguments, info):
        if name != "run_py":
            raise Err(types.ToolError_UnknownTool(name))
        try:
            args = json.loads(arguments)
        except ValueError as e:
            raise Err(types.ToolError_InvalidArguments(types.InvalidArguments("", str(e))))
        code = args.get("code") if isinstance(args, dict) else None
        if not isinstance(code, str):
            raise Err(types.ToolError_InvalidArguments(
                types.InvalidArguments("/code", "a string is required")))
        if len(code.encode("utf-8", "replace")) > MAX_CODE_BYTES:
            raise Err(types.ToolError_InvalidArguments(types.InvalidArguments(
                "/code",
                f"the snippet is {len(code.encode())} bytes; the limit is {MAX_CODE_BYTES}",
            )))
        console = Console()
        try:
            value = evaluate(code, console)
        except BaseException as error:  # SystemExit and KeyboardInterrupt too
            message = describe(error)
            logged = console.transcript()
            if logged:
                message += "\nconsole before the error:\n" + cut(
                    logged.rstrip("\n"), MAX_ERROR_CONSOLE_BYTES
                )
            raise failed(message)
        transcript = console.transcript()
        for_llm = ""
        if transcript:
            for_llm = "console:\n" + cut(transcript, LLM_CONSOLE_BYTES).rstrip("\n") + "\n"
        for_llm += "result: " + cut(value, LLM_VALUE_BYTES)
        for_user = transcript + "=> " + cut(value, USER_VALUE_BYTES)
        return types.ToolOutput_Dual(types.DualOutput(for_llm=for_llm, for_user=for_user))
