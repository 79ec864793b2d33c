// {{name}}: a toolhost plugin in JavaScript. Build it with
//
//     npm install && npm run build
//
// Exports are camelCase (`listTools`, `callTool`, `parametersSchema`); a
// variant is `{ tag, val }`; arguments arrive as a JSON string, already
// checked against the schema. Throw `{ tag: "failed", val: { message,
// retryable } }` for a failure the model should see; anything else thrown
// (a bug) fails the call, and toolhost reports its message with the line
// of this file it came from (`callTool` prints the stack for that).
// Settings (`[plugins.{{name}}.settings]` in toolhost.toml) and granted
// secrets are read through `wasi:config/store`.

import { get as setting } from "wasi:config/store@0.2.0-rc.1";

const SCHEMA = {
  type: "object",
  properties: { text: { type: "string", description: "The text to send back." } },
  required: ["text"],
  additionalProperties: false,
};

export const tool = {
  listTools() {
    return [
      {
        name: "{{tool}}",
        description: "Returns the text it is given",
        parametersSchema: JSON.stringify(SCHEMA),
        concurrencySafe: true,
        idempotent: true,
        outputSchema: undefined,
        // What it does to the world (MCP's tool annotations): it changes
        // nothing and reaches nothing outside itself.
        hints: { readOnly: true, destructive: undefined, openWorld: false },
      },
    ];
  },

  callTool(name, argumentsJson, info) {
    try {
      return call(name, argumentsJson, info);
    } catch (e) {
      // Not one of the interface's errors: a bug. The engine keeps only its
      // message; its stack, on stderr, tells toolhost which line threw.
      if (e instanceof Error) {
        console.error(e.stack);
      }
      throw e;
    }
  },
};

function call(name, argumentsJson, _info) {
  if (name !== "{{tool}}") {
    throw { tag: "unknown-tool", val: name };
  }
  const { text } = JSON.parse(argumentsJson);
  if (!text) {
    throw { tag: "invalid-arguments", val: { path: "/text", message: "the text is empty" } };
  }
  // A setting, read through wasi:config/store (undefined when not set).
  const prefix = setting("prefix") ?? "";
  return { tag: "text", val: prefix + text };
}
