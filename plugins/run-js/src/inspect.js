// Renders a value on one line for run_js, like Node's util.inspect: strings
// quoted, arrays and plain objects (and class instances) spelled out to a
// depth, long ones cut; anything else as the engine displays it.
// `display` is that engine display, passed in from Rust.
(display) => {
  const MAX_DEPTH = 4;
  const MAX_ITEMS = 100;
  const plainKey = /^[A-Za-z_$][\w$]*$/;
  const key = (k) => (plainKey.test(k) ? k : JSON.stringify(k));
  const inspect = (v, depth, seen) => {
    if (typeof v === "string") return JSON.stringify(v);
    if (typeof v !== "object" || v === null) return display(v);
    const isArray = Array.isArray(v);
    if (!isArray && Object.prototype.toString.call(v) !== "[object Object]") {
      return display(v);
    }
    if (seen.includes(v)) return "[Circular]";
    if (depth >= MAX_DEPTH) return isArray ? "[Array]" : "[Object]";
    seen.push(v);
    const keys = isArray ? null : Object.keys(v);
    const count = isArray ? v.length : keys.length;
    const parts = [];
    for (let i = 0; i < Math.min(count, MAX_ITEMS); i++) {
      parts.push(
        isArray
          ? inspect(v[i], depth + 1, seen)
          : `${key(keys[i])}: ${inspect(v[keys[i]], depth + 1, seen)}`,
      );
    }
    seen.pop();
    if (count > MAX_ITEMS) parts.push(`... ${count - MAX_ITEMS} more`);
    if (isArray) return parts.length ? `[ ${parts.join(", ")} ]` : "[]";
    const proto = Object.getPrototypeOf(v);
    const name =
      proto && proto !== Object.prototype && proto.constructor && proto.constructor.name
        ? `${proto.constructor.name} `
        : "";
    return parts.length ? `${name}{ ${parts.join(", ")} }` : `${name}{}`;
  };
  return (v) => inspect(v, 0, []);
}
