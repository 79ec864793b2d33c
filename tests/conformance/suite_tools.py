"""The tools the official MCP conformance suite calls
(@modelcontextprotocol/conformance, server scenarios), written with the
official Python MCP SDK and served over stdio. toolhost mounts this server
as a remote with an empty prefix, and the suite runs against
`toolhost serve --http`: every result crosses toolhost's MCP client, its
pipeline and its MCP server before the suite sees it.

Each tool answers the way the suite's reference server does (its
everything-server), so a scenario that passes against the reference and
fails here has found a fault in toolhost.
"""

import base64
import io
import json
import wave

import anyio
from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("toolhost-conformance-tools", version="1.0.0")

# The smallest valid PNG (1x1, transparent).
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="


def wav() -> str:
    """A tenth of a second of silence as a WAV file, base64."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * 800)
    return base64.b64encode(buf.getvalue()).decode()


@server.tool(description="Tests simple text content response")
def test_simple_text() -> list[types.TextContent]:
    return [types.TextContent(type="text", text="This is a simple text response for testing.")]


@server.tool(description="Tests image content response")
def test_image_content() -> list[types.ImageContent]:
    return [types.ImageContent(type="image", data=PNG, mime_type="image/png")]


@server.tool(description="Tests audio content response")
def test_audio_content() -> list[types.AudioContent]:
    return [types.AudioContent(type="audio", data=wav(), mime_type="audio/wav")]


@server.tool(description="Tests embedded resource content response")
def test_embedded_resource() -> list[types.EmbeddedResource]:
    return [
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="test://embedded-resource",
                mime_type="text/plain",
                text="This is an embedded resource content.",
            ),
        )
    ]


@server.tool(description="Tests response with multiple content types (text, image, resource)")
def test_multiple_content_types() -> list[types.ContentBlock]:
    return [
        types.TextContent(type="text", text="Multiple content types test:"),
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}),
            ),
        ),
    ]


@server.tool(description="Tests tool that emits log messages during execution")
async def test_tool_with_logging(ctx: Context) -> str:
    await ctx.info("Tool execution started")
    await anyio.sleep(0.05)
    await ctx.info("Tool processing data")
    await anyio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@server.tool(description="Tests tool that reports progress notifications")
async def test_tool_with_progress(ctx: Context) -> str:
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
        await anyio.sleep(0.05)
    return "progress reported"


@server.tool(description="Tests error response handling")
def test_error_handling() -> str:
    raise ToolError("This tool intentionally returns an error for testing")


@server.tool(description="Tests server-initiated sampling (LLM completion request)")
async def test_sampling(ctx: Context, prompt: str) -> str:
    result = await ctx.session.create_message(
        messages=[
            types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
        ],
        max_tokens=100,
    )
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else str(content)
    return f"LLM response: {text}"


class UserInfo(BaseModel):
    username: str
    email: str


@server.tool(description="Tests server-initiated elicitation (user input request)")
async def test_elicitation(ctx: Context, message: str) -> str:
    answer = await ctx.elicit(message=message, schema=UserInfo)
    return f"User response: action={answer.action}"


SEP1034_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    },
}

SEP1330_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


async def elicit_raw(ctx: Context, message: str, schema: dict) -> str:
    answer = await ctx.session.elicit_form(message, requested_schema=schema, related_request_id=ctx.request_id)
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


@server.tool(description="Tests elicitation with default values (SEP-1034)")
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    return await elicit_raw(ctx, "Please review and update the form fields with defaults", SEP1034_SCHEMA)


@server.tool(description="Tests elicitation with enum schema variants (SEP-1330)")
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    return await elicit_raw(ctx, "Please select options from the enum fields", SEP1330_SCHEMA)


@server.tool(description="A tool whose call the suite reads over an SSE stream (SEP-1699)")
async def test_reconnection() -> str:
    await anyio.sleep(0.1)
    return "Reconnection test completed"


@server.tool(description="Tool with JSON Schema 2020-12 features")
def json_schema_2020_12_tool(name: str | None = None, address: dict | None = None) -> str:
    return f"name={name}, address={json.dumps(address)}"


# The suite checks that these 2020-12 keywords survive every hop to its
# client, so the tool declares exactly its schema.
server._tool_manager._tools["json_schema_2020_12_tool"].parameters = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


if __name__ == "__main__":
    server.run("stdio")
