"""{{name}}: a toolhost plugin in Python. Build it with

    componentize-py -d wit -w tool-plugin-with-settings componentize app -o {{file}}.wasm

Arguments arrive as a JSON string, already checked against the schema;
schemas are handed over as JSON strings. Raise
`Err(types.ToolError_Failed(...))` for a failure the model should see; any
other exception fails the call with its traceback, and a value of the wrong
type (the text itself rather than `types.ToolOutput_Text(text)`) fails it
naming the type. Only modules imported
when the component is built are inside it: import what you use at the top.

Settings (`[plugins.{{name}}.settings]` in toolhost.toml) and granted
secrets are read through `wasi:config/store`: `store.get("prefix")`.
"""

import json

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import store, types

SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "description": "The text to send back."}},
    "required": ["text"],
    "additionalProperties": False,
}


class Tool(exports.Tool):
    def list_tools(self):
        return [
            types.ToolDescriptor(
                name="{{tool}}",
                description="Returns the text it is given",
                parameters_schema=json.dumps(SCHEMA),
                concurrency_safe=True,
                idempotent=True,
                output_schema=None,
                # What it does to the world (MCP's tool annotations): it
                # changes nothing and reaches nothing outside itself.
                hints=types.ToolHints(read_only=True, destructive=None, open_world=False),
            )
        ]

    def call_tool(self, name, arguments, info):
        if name != "{{tool}}":
            raise Err(types.ToolError_UnknownTool(name))
        text = json.loads(arguments)["text"]
        if not text:
            raise Err(types.ToolError_InvalidArguments(types.InvalidArguments(path="/text", message="the text is empty")))
        # A setting, read through wasi:config/store (None when not set).
        prefix = store.get("prefix") or ""
        return types.ToolOutput_Text(prefix + text)
