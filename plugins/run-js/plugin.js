// run_js: runs a JavaScript snippet and returns the value of its last
// expression with everything it wrote through `console`. Built with
// ComponentizeJS (SpiderMonkey, as StarlingMonkey embeds it) against
// `toolhost:plugin@0.3.0`; the builtin `run_code` tool calls it.
//
// The engine gets nothing from outside: no `require`, no `fs`, no `fetch`
// that reaches anything (the plugin is granted nothing), no timers worth
// having. Time and memory are bounded by the host's sandbox, which stops
// the instance at its deadline or its memory limit.

// The name scripts see in error positions (`snippet.js:3:7`).
const SOURCE_NAME = "snippet.js";
// Bytes of a snippet accepted.
const MAX_CODE_BYTES = 1 << 20;
// Bytes of console text kept per run; later writes are counted, not kept.
const MAX_CONSOLE_BYTES = 1 << 20;
// Bytes of console output repeated in an error message.
const MAX_ERROR_CONSOLE_BYTES = 4 << 10;
// Stack frames kept in an error message.
const MAX_FRAMES = 10;
// Bytes of console output the model sees.
const LLM_CONSOLE_BYTES = 8 << 10;
// Bytes of the value the model sees.
const LLM_VALUE_BYTES = 4 << 10;
// Bytes of the value the user sees.
const USER_VALUE_BYTES = 1 << 20;
// Levels of nested arrays and objects spelled out.
const MAX_DEPTH = 4;
// Elements or properties shown per array or object.
const MAX_ITEMS = 100;

const ARGS = {
  type: "object",
  properties: {
    code: {
      type: "string",
      description:
        "JavaScript source, run as a script. The value of its last expression is returned, " +
        "with everything written through console.log, info, debug, warn and error.",
    },
  },
  required: ["code"],
  additionalProperties: false,
};

// Globals of the engine's host that a snippet does not get.
const WITHHELD = [
  "fetch", "Request", "Response", "Headers", "FormData", "MultipartFormData",
  "setTimeout", "setInterval", "clearTimeout", "clearInterval",
  "addEventListener", "removeEventListener", "dispatchEvent", "location", "WorkerLocation",
];

const encoder = new TextEncoder();
const bytes = (text) => encoder.encode(text).length;

// --- console -------------------------------------------------------------

/** What the console captured during one run. */
function capture() {
  return { lines: [], kept: 0, dropped: 0 };
}

function installConsole(captured) {
  const record = (stream) => (...args) => {
    const text = args.map((v) => (typeof v === "string" ? v : inspect(v))).join(" ");
    const size = bytes(text);
    if (captured.kept + size > MAX_CONSOLE_BYTES) {
      captured.dropped += size;
    } else {
      captured.kept += size;
      captured.lines.push({ stream, text });
    }
  };
  globalThis.console = {
    log: record("out"),
    info: record("out"),
    debug: record("out"),
    error: record("err"),
    warn: record("err"),
  };
}

/** The console lines in order, error-stream lines marked `[error]`. */
function transcript(captured) {
  let text = "";
  for (const line of captured.lines) {
    text += (line.stream === "err" ? "[error] " : "") + line.text + "\n";
  }
  if (captured.dropped > 0) {
    text += `[console output cut: ${captured.dropped} more bytes not kept]\n`;
  }
  return text;
}

/** `text` if it fits in `max` bytes, else its head and tail. */
function cut(text, max) {
  const all = encoder.encode(text);
  if (all.length <= max) return text;
  const decoder = new TextDecoder();
  // Cut on character boundaries: back off over continuation bytes.
  let head = Math.floor(max / 2);
  while (head > 0 && (all[head] & 0xc0) === 0x80) head--;
  let tail = all.length - Math.floor(max / 2);
  while (tail < all.length && (all[tail] & 0xc0) === 0x80) tail++;
  return `${decoder.decode(all.subarray(0, head))}\n[… ${tail - head} bytes cut …]\n${decoder.decode(all.subarray(tail))}`;
}

// --- inspect ---------------------------------------------------------------

/** One-line rendering in the manner of Node's `util.inspect`. */
function inspect(value) {
  try {
    return write(value, 0, []);
  } catch {
    return display(value);
  }
}

/** What the engine shows for a value that is not spelled out. */
function display(value) {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "symbol") return value.toString();
  if (typeof value === "function") {
    return value.name ? `[Function: ${value.name}]` : "[Function (anonymous)]";
  }
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

function isPlain(value) {
  if (value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return true;
  const tag = Object.prototype.toString.call(value);
  return tag === "[object Object]";
}

function write(value, depth, seen) {
  if (!isPlain(value)) return display(value);
  const isArray = Array.isArray(value);
  if (seen.includes(value)) return "[Circular]";
  if (depth >= MAX_DEPTH) return isArray ? "[Array]" : "[Object]";
  seen.push(value);
  const keys = isArray ? null : Object.keys(value);
  const count = isArray ? value.length : keys.length;
  let out = isArray ? "[" : classPrefix(value) + "{";
  for (let i = 0; i < Math.min(count, MAX_ITEMS); i++) {
    out += i === 0 ? " " : ", ";
    if (isArray) {
      out += write(value[i], depth + 1, seen);
    } else {
      out += keyText(keys[i]) + ": " + write(value[keys[i]], depth + 1, seen);
    }
  }
  if (count > MAX_ITEMS) out += `, ... ${count - MAX_ITEMS} more`;
  out += count === 0 ? (isArray ? "]" : "}") : isArray ? " ]" : " }";
  seen.pop();
  return out;
}

/** `"Name "` for an instance of a class, `""` for a plain object. */
function classPrefix(object) {
  const prototype = Object.getPrototypeOf(object);
  if (prototype === null || prototype === Object.prototype) return "";
  const name = prototype.constructor && prototype.constructor.name;
  return typeof name === "string" && name ? `${name} ` : "";
}

/** A key as written in an object literal: bare if an identifier. */
function keyText(key) {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? key : JSON.stringify(key);
}

// --- errors -----------------------------------------------------------------

/** "Uncaught TypeError: message" and the snippet's stack frames. */
function describe(error) {
  let head;
  if (error instanceof Error) {
    head = error.message ? `${error.name}: ${error.message}` : error.name;
    if (error instanceof SyntaxError && error.lineNumber !== undefined) {
      head += ` at line ${error.lineNumber}, col ${error.columnNumber}`;
    }
  } else {
    head = display(error);
  }
  let message = `Uncaught ${head}`;
  const frames = error instanceof Error ? snippetFrames(error.stack) : [];
  for (const frame of frames.slice(0, MAX_FRAMES)) message += `\n    at ${frame}`;
  if (frames.length > MAX_FRAMES) message += `\n    … ${frames.length - MAX_FRAMES} more frames`;
  return message;
}

/**
 * The frames of `stack` inside the snippet, innermost first, as
 * "function (snippet.js:LINE:COLUMN)". SpiderMonkey writes a frame of
 * evaluated code as `name@plugin.js line N > eval:LINE:COLUMN`.
 */
function snippetFrames(stack) {
  const frames = [];
  for (const line of String(stack ?? "").split("\n")) {
    const m = /^(.*?)@.* > eval:(\d+):(\d+)$/.exec(line);
    if (m) frames.push(`${m[1] || "<main>"} (${SOURCE_NAME}:${m[2]}:${m[3]})`);
  }
  return frames;
}

// --- dynamic import -----------------------------------------------------------

/**
 * Whether `code` calls `import(...)`. The engine's host has no module to
 * give a snippet, and an `import()` it meets traps the whole instance, so
 * a snippet that calls it is refused with a message before it runs. This
 * is for the message only: the sandbox contains the trap either way, and a
 * call built at run time (`eval("imp" + "ort(1)")`) still ends as a trap.
 * A scan of the source's tokens: strings, template literals, comments and
 * regular expressions are skipped, and `x.import(` is a method call.
 */
function callsImport(code) {
  let i = 0;
  let previous = ""; // the last significant character, for `/` and `.`
  while (i < code.length) {
    const c = code[i];
    if (c === "/" && code[i + 1] === "/") {
      i = code.indexOf("\n", i);
      if (i < 0) return false;
    } else if (c === "/" && code[i + 1] === "*") {
      i = code.indexOf("*/", i + 2);
      if (i < 0) return false;
      i += 2;
    } else if (c === '"' || c === "'" || c === "`") {
      i = skipQuoted(code, i);
      previous = "a";
    } else if (c === "/" && (previous === "" || "(,=:[!&|?{};+-*%<>~^".includes(previous))) {
      i = skipQuoted(code, i); // a regular expression
      previous = "a";
    } else if (/[A-Za-z_$]/.test(c)) {
      let end = i;
      while (end < code.length && /[A-Za-z0-9_$]/.test(code[end])) end++;
      if (code.slice(i, end) === "import" && previous !== ".") {
        let next = end;
        while (next < code.length && /\s/.test(code[next])) next++;
        if (code[next] === "(") return true;
      }
      previous = "a";
      i = end;
    } else {
      if (!/\s/.test(c)) previous = c;
      i++;
    }
  }
  return false;
}

/** The index after the quoted string, template or regex starting at `start`. */
function skipQuoted(code, start) {
  const quote = code[start];
  let i = start + 1;
  let inClass = false;
  while (i < code.length) {
    const c = code[i];
    if (c === "\\") {
      i += 2;
      continue;
    }
    if (quote === "/" && c === "[") inClass = true;
    else if (quote === "/" && c === "]") inClass = false;
    else if (c === quote && !inClass) return i + 1;
    else if (quote === "`" && c === "$" && code[i + 1] === "{") {
      // A substitution: skip to its matching brace, strings included.
      let depth = 1;
      i += 2;
      while (i < code.length && depth > 0) {
        if (code[i] === "{") depth++;
        else if (code[i] === "}") depth--;
        else if ("'\"`".includes(code[i])) {
          i = skipQuoted(code, i);
          continue;
        }
        i++;
      }
      continue;
    } else if (quote !== "`" && c === "\n") return i;
    i++;
  }
  return i;
}

// --- the tool -----------------------------------------------------------------

function failed(message) {
  return { tag: "failed", val: { message, retryable: false } };
}

async function runJs(args) {
  if (typeof args.code !== "string") {
    throw { tag: "invalid-arguments", val: { path: "/code", message: "must be a string" } };
  }
  if (bytes(args.code) > MAX_CODE_BYTES) {
    throw {
      tag: "invalid-arguments",
      val: { path: "/code", message: `the snippet is ${bytes(args.code)} bytes; the limit is ${MAX_CODE_BYTES}` },
    };
  }
  // What the engine's host adds beside the language and reaches past the
  // snippet (the network, timers, the event loop's listeners) is taken
  // away: the policy grants nothing anyway, and a snippet should be told so
  // by a ReferenceError rather than by a refused request.
  for (const name of WITHHELD) delete globalThis[name];
  if (callsImport(args.code)) {
    throw failed("Uncaught TypeError: import() is not available: a snippet has no modules to load");
  }
  const captured = capture();
  installConsole(captured);
  let value;
  try {
    // Indirect eval: the snippet runs as a script in the global scope.
    value = (0, eval)(args.code);
    // A promise's jobs run, and a settled one gives its outcome.
    if (value instanceof Promise) value = await value;
  } catch (error) {
    const logged = transcript(captured);
    const message = describe(error);
    throw failed(
      logged
        ? `${message}\nconsole before the error:\n${cut(logged.trimEnd(), MAX_ERROR_CONSOLE_BYTES)}`
        : message,
    );
  }
  const shown = inspect(value);
  const logged = transcript(captured);
  let forLlm = logged ? `console:\n${cut(logged, LLM_CONSOLE_BYTES).trimEnd()}\n` : "";
  forLlm += `result: ${cut(shown, LLM_VALUE_BYTES)}`;
  const forUser = `${logged}=> ${cut(shown, USER_VALUE_BYTES)}`;
  return { tag: "dual", val: { forLlm, forUser } };
}

export const tool = {
  listTools() {
    return [
      {
        name: "run_js",
        description:
          "Runs a JavaScript snippet (ECMAScript, as a script) and returns the value of its last " +
          "expression and what it wrote with console.log/info/debug/warn/error. There is no " +
          "filesystem, network, require, import or timers. A thrown exception or a syntax error " +
          "fails the call with its message and line.",
        parametersSchema: JSON.stringify(ARGS),
        concurrencySafe: true,
        idempotent: true,
        outputSchema: undefined,
        hints: { readOnly: true, destructive: undefined, openWorld: false },
      },
    ];
  },

  async callTool(name, argumentsJson, _info) {
    if (name !== "run_js") throw { tag: "unknown-tool", val: name };
    return runJs(JSON.parse(argumentsJson));
  },
};
