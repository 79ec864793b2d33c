// js_slug: a toolhost plugin written in JavaScript, built with
// ComponentizeJS against `toolhost:plugin@0.3.0` (`make plugins` builds it;
// sdk/README.md, "Plugins in JavaScript", walks through it).
//
// Conventions of a JavaScript plugin, all visible below:
// - The module exports `tool` (the WIT interface `tool`), an object whose
//   methods are the interface's functions in camelCase: `listTools`,
//   `callTool`. Record fields are camelCase too (`parametersSchema`).
// - A variant is `{ tag, val }` with the case's name as the tag
//   (`{ tag: "text", val: "..." }`); an option is the value or `undefined`.
// - Arguments arrive as a JSON string, already checked by the host against
//   the tool's schema; schemas are handed over as JSON strings.
// - An expected failure is thrown as the error case of the result:
//   `throw { tag: "failed", val: { message, retryable } }`. Anything else
//   thrown (a TypeError, say) traps the instance, and the host reports its
//   message and the line it came from (from the stack `callTool` prints).

import { log } from "toolhost:plugin/host@0.3.0";

const SLUGIFY = {
  type: "object",
  properties: {
    text: { type: "string", description: "The text to turn into a slug." },
    max: { type: "integer", minimum: 1, maximum: 200, description: "Longest slug (default 60)." },
  },
  required: ["text"],
  additionalProperties: false,
};

const SHOUT = {
  type: "object",
  properties: { text: { type: "string" } },
  required: ["text"],
  additionalProperties: false,
};

function failed(message) {
  return { tag: "failed", val: { message, retryable: false } };
}

// Latin letters with accents, as their plain letter. (The engine has no
// Unicode normalization tables, so `normalize` is not there to do it.)
const PLAIN = Object.fromEntries(
  [
    ["àáâãäå", "a"], ["ç", "c"], ["èéêë", "e"], ["ìíîï", "i"], ["ñ", "n"],
    ["òóôõöø", "o"], ["ùúûü", "u"], ["ýÿ", "y"], ["ß", "ss"], ["æ", "ae"], ["œ", "oe"],
  ].flatMap(([letters, plain]) => [...letters].map((l) => [l, plain])),
);

function slugify(args) {
  const slug = [...args.text.toLowerCase()]
    .map((c) => PLAIN[c] ?? c)
    .join("")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, args.max ?? 60)
    .replace(/-+$/, "");
  if (!slug) {
    throw failed("the text has no letters or digits to make a slug from");
  }
  log("debug", "slugified", [["length", String(slug.length)]]);
  return { tag: "text", val: slug };
}

function shout(args) {
  // A bug on purpose: `toUpperCase` of a property that is not there. The
  // TypeError escapes, and the host reports it with the engine's message.
  return { tag: "text", val: args.txt.toUpperCase() };
}

const TOOLS = {
  slugify: ["Turns a text into a URL slug", SLUGIFY, slugify],
  shout: ["Upper-cases a text (has a bug)", SHOUT, shout],
};

export const tool = {
  listTools() {
    return Object.entries(TOOLS).map(([name, [description, schema]]) => ({
      name,
      description,
      parametersSchema: JSON.stringify(schema),
      concurrencySafe: true,
      idempotent: true,
      outputSchema: undefined,
      // Pure functions of their text: they change and reach nothing.
      hints: { readOnly: true, destructive: undefined, openWorld: false },
    }));
  },

  callTool(name, argumentsJson, _info) {
    const entry = TOOLS[name];
    if (!entry) {
      throw { tag: "unknown-tool", val: name };
    }
    try {
      return entry[2](JSON.parse(argumentsJson));
    } catch (e) {
      // Not one of the interface's errors: a bug. The engine hands the host
      // only its message; its stack, on stderr, says which line threw.
      if (e instanceof Error) {
        console.error(e.stack);
      }
      throw e;
    }
  },
};
