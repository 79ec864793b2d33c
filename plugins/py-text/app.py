"""py_text: a toolhost plugin written in Python, built with componentize-py
against `toolhost:plugin@0.3.0` (`make plugins` builds it; sdk/README.md,
"Plugins in Python", walks through it).

Conventions of a Python plugin, all visible below:

- The app defines a class named `Tool` that subclasses `wit_world.exports.Tool`.
- Arguments arrive as a JSON *string* (`arguments`), already checked by the
  host against the tool's schema; schemas are handed over as JSON strings too.
- A result is a `types.ToolOutput_*` value; structured output is a
  `types.StructuredOutput` with the value as JSON text.
- Only modules imported when the component is built are inside it (there is
  no filesystem to import from later), so import at the top what the tools
  use, including what the standard library imports lazily (`heapq` here).
- An expected failure is raised as `componentize_py_types.Err(types.ToolError_*)`
  and reaches the model as the tool's error. Any other exception traps the
  instance, and the host reports it with its Python traceback.
"""

import heapq  # noqa: F401 -- Counter.most_common imports it when called
import json
from collections import Counter

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import host, types

WORD_COUNT_SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The text to look at."},
        "top": {
            "type": "integer",
            "minimum": 1,
            "maximum": 50,
            "description": "How many of the most frequent words to list (default 3).",
        },
    },
    "required": ["text"],
    "additionalProperties": False,
}

WORD_COUNT_OUTPUT = {
    "type": "object",
    "properties": {
        "words": {"type": "integer"},
        "lines": {"type": "integer"},
        "top": {"type": "array", "items": {"type": "array"}},
    },
    "required": ["words", "lines", "top"],
}

RATIO_SCHEMA = {
    "type": "object",
    "properties": {
        "part": {"type": "number"},
        "whole": {"type": "number"},
    },
    "required": ["part", "whole"],
    "additionalProperties": False,
}


def failed(message: str) -> Err:
    return Err(types.ToolError_Failed(types.Failure(message=message, retryable=False)))


def word_count(args: dict):
    text = args["text"]
    words = [w.strip(".,;:!?\"'()").lower() for w in text.split()]
    words = [w for w in words if w]
    if not words:
        raise failed("the text has no words")
    top = Counter(words).most_common(args.get("top", 3))
    value = {"words": len(words), "lines": len(text.splitlines()) or 1, "top": [list(t) for t in top]}
    summary = f"{value['words']} words on {value['lines']} line(s); most frequent: " + ", ".join(
        f"{w} ({n})" for w, n in top
    )
    block = types.ContentBlock(content=types.Content_Text(summary), annotations=None)
    return types.ToolOutput_Structured(types.StructuredOutput(json=json.dumps(value), blocks=[block]))


def ratio(args: dict):
    host.log(host.LogLevel.DEBUG, "ratio", [("part", str(args["part"])), ("whole", str(args["whole"]))])
    # No check for a zero `whole`, on purpose: the ZeroDivisionError escapes,
    # and the host reports it with its traceback.
    return types.ToolOutput_Text(f"{args['part'] / args['whole']:.4g}")


TOOLS = {
    "word_count": (
        "Counts the words and lines of a text and lists its most frequent words",
        WORD_COUNT_SCHEMA,
        WORD_COUNT_OUTPUT,
        word_count,
    ),
    "ratio": ("Divides part by whole", RATIO_SCHEMA, None, ratio),
}


class Tool(exports.Tool):
    def list_tools(self):
        return [
            types.ToolDescriptor(
                name=name,
                description=description,
                parameters_schema=json.dumps(schema),
                concurrency_safe=True,
                idempotent=True,
                output_schema=json.dumps(output) if output else None,
                # Pure functions of their arguments: they change nothing.
                hints=types.ToolHints(read_only=True, destructive=None, open_world=False),
            )
            for name, (description, schema, output, _) in TOOLS.items()
        ]

    def call_tool(self, name, arguments, info):
        if name not in TOOLS:
            raise Err(types.ToolError_UnknownTool(name))
        return TOOLS[name][3](json.loads(arguments))
